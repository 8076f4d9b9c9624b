package supervisor

// PidBase is the first pid a run's processes get in its pid namespace.
// A tree restored by CRIU into a fork keeps the pids it had in its run,
// which must be free in the fork's namespace: there, before the restore,
// nothing has been started and the supervisor's threads stay below it.
const PidBase = 1000
