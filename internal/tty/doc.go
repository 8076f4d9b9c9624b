// Package tty gives a command run by tine a real terminal: it allocates a
// pseudo-terminal whose slave the command gets as its controlling terminal
// (the supervisor or the sandbox makes it so), and attaches the caller's
// terminal to the master: raw mode while attached, the window size at the
// start and on every SIGWINCH, the output drained once the command ends.
//
// The pseudo-terminal is allocated where tine runs (the host's devpts), not
// in the run: the slave travels to the run as a file descriptor, and the
// kernel's line discipline does the rest (^C and ^Z signal the foreground
// process group the command's shell chose, resizes signal SIGWINCH).
package tty
