// Package livefork performs the ptrace live fork of a running process: it
// makes the process fork itself and moves the child into another run's mount
// (and network) namespace and cgroup, so the child continues with the
// parent's exact memory, copy-on-write, but sees the fork's files.
//
// The caller (tine's engine) freezes the run's cgroup, calls Check on each
// process, Seize on the eligible ones, thaws the cgroup, then calls
// Session.Fork for each process and finally Session.Close. Only Linux on
// x86-64 is supported; elsewhere every entry point returns ErrUnsupported.
//
// How a fork is injected. The tracer stops the process with
// PTRACE_INTERRUPT, saves its registers, points the instruction pointer at a
// "syscall" instruction found in the process's vDSO, loads a clone
// (CLONE_PARENT|SIGCHLD) into the registers and single-steps once. The child
// is attached automatically (PTRACE_O_TRACEFORK). The parent gets its saved
// registers back and is detached at once: its pause is the interrupt, the
// clone and a few reads of /proc. The child then runs a sequence of injected
// system calls on a scratch page it maps for itself: setns into the target
// namespaces, chdir, re-open the workspace file descriptors at their
// offsets, re-create listening sockets on the same descriptor numbers and
// point stdout and stderr at its own logs, and, last, confine itself as the
// target's processes are (Target.Confine: no_new_privs, a Landlock ruleset
// of paths it opens in the target's view, a seccomp filter stacked on the
// parent's). It is moved into the target cgroups from outside, gets the
// parent's saved registers and is detached; a child any step fails in is
// killed.
//
// Registers are always restored from a signal-delivery stop, so the kernel
// itself restarts a system call the process was blocked in (-ERESTARTSYS
// and friends, restart_syscall for -ERESTART_RESTARTBLOCK), exactly as if a
// signal without a handler had been ignored.
//
// Limits: the child stays in the origin's pid namespace and its real parent
// is the origin's parent (the run's supervisor, which reaps it). Memory
// mappings of workspace files keep pointing at the origin's files (shared
// writable ones are refused). The namespace files in Target are opened by
// the child, so they are resolved in the origin's own view of the file
// system, and entering them needs CAP_SYS_ADMIN: a process that does not run
// as root in its user namespace fails at setns, and its child is killed.
// The pause is dominated by the kernel's own fork, which must write-protect
// every page table entry of the parent's private memory.
package livefork
