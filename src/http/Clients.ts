/**
 * The typed clients at their earlier path (`src/http/Clients.ts`, before issue 43 moved them below the runtime to
 * `src/contracts/Clients.ts`): kept so imports of it keep working. It imports contracts only: no runtime code.
 */
export * from "../contracts/Clients.js"
