import { Layer } from "effect"
import { HostChannel } from "./HostChannel.js"
import { runProcess } from "./Process.js"

/**
 * Every host is this machine: a command for any target (ssh or local) runs here as a process, argv as given. The
 * host protocol's tests use it to run the real remote command line (`ctl … --here --json`, settings in
 * KEEL_REMOTE_CTL) where no sshd is at hand; the ssh adapter itself is tested against a real sshd.
 */
export const LocalExecHostChannel = Layer.succeed(HostChannel, {
  run: (spec, request) => runProcess(spec.target, request.argv, request)
})
