// Package cgroup gives every tine run its own control group, so the run's
// processes can be frozen, killed, limited and measured as one unit.
//
// A Group is named by the run's short id and lives under a "tine" directory
// at the root of every hierarchy tine uses: <root>/tine/<name> in the unified
// (v2) hierarchy and in each legacy (v1) hierarchy of the freezer, memory,
// cpu, cpuacct and pids controllers that is mounted. The layout is read from
// /proc/self/mountinfo, never guessed from the kernel version, so pure v2,
// pure v1 and hybrid machines (v1 controllers beside an empty v2 tree) all
// work:
//
//   - Freeze uses cgroup.freeze of the v2 group when there is one (even an
//     empty v2 tree has it), else the v1 freezer.
//   - Kill writes cgroup.kill when the kernel has it, else freezes the group,
//     sends SIGKILL to every member and thaws, until the group is empty.
//   - SetLimits and Stats use whichever hierarchy has the controller.
//
// The life of a run's group:
//
//	g, err := cgroup.Open("r1a2b3c4d") // create, or reopen after a restart
//	err = g.Add(cmd.Process.Pid)        // its later children are born inside
//	err = g.SetLimits(cgroup.Limits{MemoryBytes: 2 << 30, CPU: 1.5})
//	err = g.Freeze(ctx)                 // every task stopped: safe to fork the workspace
//	err = g.Thaw()
//	err = g.Remove(ctx)                 // kill what is left, remove the directories
//
// List names every tine group on the machine, so a sweep can Load and
// Remove the ones whose run is gone. Off Linux every function returns
// ErrUnsupported.
package cgroup
