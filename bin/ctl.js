#!/usr/bin/env node
// The `ctl` binary: the bundled CLI (npm run build writes dist/ctl/). Kept as plain JS so `npm link`/`npx ctl` work.
// Stack traces name the src/ files under NODE_OPTIONS=--enable-source-maps (off by default: it costs start-up).
import "../dist/ctl/main.js"
