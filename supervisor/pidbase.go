package supervisor

// PidBase is the first pid a run's processes get in its pid namespace:
// the supervisor's own threads stay below it. A tree restored by CRIU into
// a fork keeps the pids it had in its run, which must be free in the
// fork's namespace; with every run's processes at PidBase and above, and
// nothing started in a fork before the restore, they are.
const PidBase = 1000
