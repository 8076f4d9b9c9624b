package main

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// commandGroups are the headings of tine --help, in order, each with the
// commands under it, most used first (kubectl's and gh's way: a person
// finds the command by what they are doing, not by its first letter).
var commandGroups = []struct {
	id, title string
	commands  []string
}{
	{"start", "Start here:", []string{"init", "fork", "ls", "diff", "merge", "discard", "shell", "exec", "demo"}},
	{"forkrun", "Fork-run and choosing:", []string{"fork-run", "compare", "choose", "summary", "cost", "combine", "promote", "export", "judge"}},
	{"fleet", "A fleet of nodes:", []string{"submit", "tasks", "fetch"}},
	{"runs", "Runs, versions and services:", []string{"tree", "log", "path", "checkpoint", "rollback", "start", "stop", "ps", "stats", "port", "logs", "screen", "input", "release"}},
	{"inside", "Inside a run, and answering its requests:", []string{"fork-self", "request", "effect", "cell", "pending", "approve", "refuse", "hook"}},
	{"setup", "Daemon and setup:", []string{"setup", "serve", "dashboard", "mcp", "completion", "version"}},
	{"trouble", "Troubleshooting:", []string{"doctor", "gc", "events"}},
}

// groupCommands files root's commands under commandGroups, in their
// order; a command of none (a hidden one) comes after.
func groupCommands(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	of := map[string]string{}
	for _, g := range commandGroups {
		root.AddGroup(&cobra.Group{ID: g.id, Title: g.title})
		for _, n := range g.commands {
			of[n] = g.id
		}
	}
	cmds := root.Commands()
	byName := map[string]*cobra.Command{}
	for _, c := range cmds {
		c.GroupID, byName[c.Name()] = of[c.Name()], c
	}
	cobra.EnableCommandSorting = false
	root.RemoveCommand(cmds...)
	for _, g := range commandGroups {
		for _, n := range g.commands {
			if c := byName[n]; c != nil {
				root.AddCommand(c)
				delete(byName, n)
			}
		}
	}
	for _, c := range cmds {
		if byName[c.Name()] != nil {
			root.AddCommand(c)
		}
	}
	root.SetHelpCommandGroupID("setup")
}

// versionFlag is --version without cobra's -v shorthand: as in kubectl
// and gh, the version is tine version or tine --version, and -v is left
// free (kubectl's -v is verbosity).
func versionFlag(root *cobra.Command) {
	root.Flags().Bool("version", false, "print tine's version (as tine version)")
}

// oldFlagNames keeps a flag's former spelling working, hidden from help:
// fork-run's --n is -n/--copies, as fork's.
func oldFlagNames(_ *pflag.FlagSet, name string) pflag.NormalizedName {
	if name == "n" {
		return "copies"
	}
	return pflag.NormalizedName(name)
}
