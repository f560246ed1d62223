import { createPrivateKey, X509Certificate } from "node:crypto"
import * as fs from "node:fs"
import * as tls from "node:tls"
import { Clock, Data, Effect, Redacted } from "effect"

/**
 * The runner port's TLS files (docs/cluster.md, "Security of the runner port"): the shared CA's certificate(s), this
 * runner's certificate and its private key, as paths (`KEEL_RUNNER_TLS_CA`, `KEEL_RUNNER_TLS_CERT`,
 * `KEEL_RUNNER_TLS_KEY`).
 */
export interface RunnerTlsFiles {
  readonly ca: string
  readonly cert: string
  readonly key: string
}

/**
 * What a runner presents and trusts, read once at start: a new certificate takes a restart (a rolling one; a CA file
 * may hold the old and the new CA meanwhile). Only node:tls reads the key; everything that prints this shows it
 * redacted.
 */
export interface RunnerTls {
  readonly ca: Buffer
  readonly cert: Buffer
  readonly key: Redacted.Redacted<Buffer>
  /** The certificate's subject and SHA-256 fingerprint, for the start-up log line. */
  readonly subject: string
  readonly fingerprint: string
  readonly expires: Date
}

/** The files cannot make a runner's TLS; `detail` names the setting and its path, never a key's contents. */
export class RunnerTlsInvalid extends Data.TaggedError("RunnerTlsInvalid")<{ readonly detail: string }> {}

const SERVER_AUTH = "1.3.6.1.5.5.7.3.1"
const CLIENT_AUTH = "1.3.6.1.5.5.7.3.2"

const pemCertificates = (text: string) =>
  text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? []

/**
 * Reads and checks the three files, so that a mistake stops this runner at start with its reason instead of every
 * connection to or from it failing later for reasons only the peer's log tells: each file readable, the CA file
 * certificates of a CA, this runner's certificate signed directly by one of them, valid now, usable both to serve and
 * to dial (each runner is both), and the key its certificate's.
 */
export const readRunnerTls = (files: RunnerTlsFiles) =>
  Effect.gen(function* () {
    const invalid = (detail: string) => Effect.fail(new RunnerTlsInvalid({ detail }))
    const read = (name: string, file: string) =>
      Effect.try({
        try: () => fs.readFileSync(file),
        catch: (error) =>
          new RunnerTlsInvalid({
            detail: `${name} (${file}) cannot be read: ${(error as NodeJS.ErrnoException).code ?? "unreadable"}`
          })
      })
    const parse = (name: string, file: string, pem: string) =>
      Effect.try({
        try: () => new X509Certificate(pem),
        catch: () => new RunnerTlsInvalid({ detail: `${name} (${file}) holds a certificate that does not parse` })
      })
    const ca = yield* read("KEEL_RUNNER_TLS_CA", files.ca)
    const cert = yield* read("KEEL_RUNNER_TLS_CERT", files.cert)
    const key = yield* read("KEEL_RUNNER_TLS_KEY", files.key)

    const caPems = pemCertificates(ca.toString("utf8"))
    if (caPems.length === 0) return yield* invalid(`KEEL_RUNNER_TLS_CA (${files.ca}) holds no PEM certificate`)
    const authorities: Array<X509Certificate> = []
    for (const pem of caPems) authorities.push(yield* parse("KEEL_RUNNER_TLS_CA", files.ca, pem))
    const notCa = authorities.find((authority) => !authority.ca)
    if (notCa !== undefined)
      return yield* invalid(
        `KEEL_RUNNER_TLS_CA (${files.ca}) holds ${notCa.subject.replaceAll("\n", ", ")}, not a CA certificate (basicConstraints CA:TRUE)`
      )

    const leafPem = pemCertificates(cert.toString("utf8"))[0]
    if (leafPem === undefined) return yield* invalid(`KEEL_RUNNER_TLS_CERT (${files.cert}) holds no PEM certificate`)
    const leaf = yield* parse("KEEL_RUNNER_TLS_CERT", files.cert, leafPem)
    const subject = leaf.subject.replaceAll("\n", ", ")
    if (!authorities.some((authority) => leaf.checkIssued(authority) && leaf.verify(authority.publicKey)))
      return yield* invalid(
        `KEEL_RUNNER_TLS_CERT (${files.cert}, ${subject}) is not signed by a CA of KEEL_RUNNER_TLS_CA (${files.ca}): ` +
          "the other runners would refuse it"
      )
    const now = yield* Clock.currentTimeMillis
    const from = new Date(leaf.validFrom)
    const expires = new Date(leaf.validTo)
    if (now < from.getTime() || now > expires.getTime())
      return yield* invalid(
        `KEEL_RUNNER_TLS_CERT (${files.cert}, ${subject}) is valid from ${from.toISOString()} to ${expires.toISOString()}, not now`
      )
    // No extended key usage means any; when it is there, a runner's certificate must allow both ends of a connection.
    const usage = leaf.keyUsage as ReadonlyArray<string> | undefined
    if (usage !== undefined && !(usage.includes(SERVER_AUTH) && usage.includes(CLIENT_AUTH)))
      return yield* invalid(
        `KEEL_RUNNER_TLS_CERT (${files.cert}, ${subject}) must allow both serverAuth and clientAuth (extendedKeyUsage): ` +
          "every runner serves its port and dials the others"
      )

    // Neither the key's bytes nor OpenSSL's text about them go into a message.
    const privateKey = yield* Effect.try({
      try: () => createPrivateKey(key),
      catch: () =>
        new RunnerTlsInvalid({
          detail: `KEEL_RUNNER_TLS_KEY (${files.key}) is not an unencrypted PEM private key`
        })
    })
    if (!leaf.checkPrivateKey(privateKey))
      return yield* invalid(
        `KEEL_RUNNER_TLS_KEY (${files.key}) is not the key of the certificate in KEEL_RUNNER_TLS_CERT (${files.cert})`
      )
    // What node:tls will be given, tried once here: anything else it cannot use is a refusal at start too.
    yield* Effect.try({
      try: () => tls.createSecureContext({ ca, cert, key, minVersion: "TLSv1.3" }),
      catch: () =>
        new RunnerTlsInvalid({
          detail: `node:tls cannot use KEEL_RUNNER_TLS_CA, KEEL_RUNNER_TLS_CERT and KEEL_RUNNER_TLS_KEY (${files.ca}, ${files.cert}, ${files.key}) together`
        })
    })
    return {
      ca,
      cert,
      key: Redacted.make(key),
      subject,
      fingerprint: leaf.fingerprint256,
      expires
    } satisfies RunnerTls
  })
