import * as http from "node:http"
import type { AddressInfo } from "node:net"

/**
 * A local OpenAI-compatible embeddings server whose "model" is a bag of words over `vocabulary`, with
 * "mobile" folded into "phone": a question can reach a passage it shares no word with only through the
 * vectors. Each dimension starts at `base(i)` (never all zero). It records every input, and answers 503
 * while `failing` is set.
 */
export const serveFakeEmbeddings = (vocabulary: ReadonlyArray<string>, base: (dimension: number) => number) =>
  new Promise<{ url: string; inputs: Array<string>; failing: boolean }>((resolve) => {
    const state = { url: "", inputs: [] as Array<string>, failing: false }
    const vector = (text: string) => {
      const v = vocabulary.map((_, i) => base(i))
      for (const word of text.toLowerCase().match(/[a-z]+/g) ?? []) {
        const at = vocabulary.indexOf(word === "mobile" ? "phone" : word)
        if (at >= 0) v[at]! += 1
      }
      return v
    }
    const server = http.createServer((req, res) => {
      let body = ""
      req.on("data", (c) => {
        body += c
      })
      req.on("end", () => {
        if (state.failing) {
          res.writeHead(503, { "content-type": "application/json" })
          res.end('{"error":"overloaded"}')
          return
        }
        const { input } = JSON.parse(body) as { input: Array<string> }
        state.inputs.push(...input)
        res.writeHead(200, { "content-type": "application/json" })
        res.end(JSON.stringify({ data: input.map((text, index) => ({ index, embedding: vector(text) })) }))
      })
    })
    server.listen(0, "127.0.0.1", () => {
      state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`
      server.unref()
      resolve(state)
    })
  })
