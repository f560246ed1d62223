#!/usr/bin/env node
// The `ctl` binary: the compiled CLI (npm run build). Kept as plain JS so `npm link`/`npx ctl` work.
import "../dist/src/cli/main.js"
