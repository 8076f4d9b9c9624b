// Package approval holds back resolutions requested from inside a run until
// a person agrees.
//
// A merge, promote, discard or choose asked for from inside a run is
// recorded by Request as a pending approval, with its arguments, the
// evidence a person is shown, and a Fingerprint of the run's state and
// readiness at that moment. A person approves or refuses it (tine approve,
// the dashboard, or an agent's user-prompt hook recognising an explicit
// choice); Pending lists what waits. The action then runs only if Consume
// succeeds: once, before the approval expires, for exactly the action, run
// and group approved, and only while the run's fingerprint is unchanged.
// Every change of an approval's state is also appended to the event log.
package approval
