import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"

/**
 * A CA and runner certificates made with the `openssl` command line, the way docs/cluster.md ("Security of the runner
 * port") tells an operator to: EC P-256 keys, a CA with basicConstraints CA:TRUE, runner certificates allowing both
 * serverAuth and clientAuth. Everything is written under `dir`.
 */
const openssl = (dir: string, args: ReadonlyArray<string>) =>
  execFileSync("openssl", args, { cwd: dir, stdio: ["ignore", "pipe", "pipe"], timeout: 30_000 })

const EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"] as const

export interface RunnerCertificate {
  readonly cert: string
  readonly key: string
}

/** A CA named `name` in `dir` (`<name>.crt`, `<name>.key`), and `issue(runner)` to sign a runner's certificate with it. */
export const makeCa = (dir: string, name: string) => {
  fs.mkdirSync(dir, { recursive: true })
  openssl(dir, [
    "req",
    "-x509",
    ...EC,
    "-keyout",
    `${name}.key`,
    "-out",
    `${name}.crt`,
    "-days",
    "30",
    "-subj",
    `/CN=${name}`,
    "-addext",
    "basicConstraints=critical,CA:TRUE",
    "-addext",
    "keyUsage=critical,keyCertSign,cRLSign"
  ])
  const issue = (
    runner: string,
    options: { readonly extendedKeyUsage?: string; readonly subjectAltName?: string } = {}
  ): RunnerCertificate => {
    const ext = path.join(dir, `${runner}.ext`)
    fs.writeFileSync(
      ext,
      [
        "basicConstraints=CA:FALSE",
        "keyUsage=critical,digitalSignature",
        `extendedKeyUsage=${options.extendedKeyUsage ?? "serverAuth,clientAuth"}`,
        ...(options.subjectAltName === undefined ? [] : [`subjectAltName=${options.subjectAltName}`])
      ].join("\n")
    )
    openssl(dir, ["req", ...EC, "-keyout", `${runner}.key`, "-out", `${runner}.csr`, "-subj", `/CN=${runner}`])
    openssl(dir, [
      "x509",
      "-req",
      "-in",
      `${runner}.csr`,
      "-CA",
      `${name}.crt`,
      "-CAkey",
      `${name}.key`,
      "-CAcreateserial",
      "-days",
      "30",
      "-extfile",
      ext,
      "-out",
      `${runner}.crt`
    ])
    return { cert: path.join(dir, `${runner}.crt`), key: path.join(dir, `${runner}.key`) }
  }
  return { cert: path.join(dir, `${name}.crt`), key: path.join(dir, `${name}.key`), issue }
}

/** The runner TLS settings for a runner holding `certificate` and trusting `caCert`. */
export const runnerTlsEnv = (caCert: string, certificate: RunnerCertificate) => ({
  KEEL_RUNNER_TLS_CA: caCert,
  KEEL_RUNNER_TLS_CERT: certificate.cert,
  KEEL_RUNNER_TLS_KEY: certificate.key
})
