package main

import (
	"cmp"
	"fmt"
	"os"
	"os/user"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/fstree"
)

func newInit(a *app) *cobra.Command {
	var o engine.InitOptions
	var asJSON, force bool
	var groups []string
	c := &cobra.Command{
		Use:   "init [PATH]",
		Short: "Take a directory under management and create its source run",
		Long: `Takes the directory (default .) under management and creates its source run.

With the overlay backend the directory's contents become the base layer and
the source's overlay is mounted at the same path, so editors keep working.
auto picks overlay as root on Linux, else btrfs or reflink where the
filesystem can, else copy.

/, a home directory (anyone's), a directory holding one, or a directory
holding another person's files is refused (exit 2) unless --force.`,
		Example: `  tine init ~/src/app
  tine init --backend copy --name app .`,
		Args: maxArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.Path = args[0]
			}
			if !force {
				if err := initGuard(cmp.Or(o.Path, ".")); err != nil {
					return err
				}
			}
			var err error
			if o.Groups, err = groupIDs(groups); err != nil {
				return usageErr(c, err.Error())
			}
			if a.remote() {
				ref, err := a.remoteInit(c.Context(), o)
				if err != nil {
					return err
				}
				return a.printInit(ref, asJSON)
			}
			return a.withEngine(c.Context(), func(e *engine.Engine) error {
				ref, err := e.Init(c.Context(), o)
				if err != nil {
					return err
				}
				return a.printInit(ref, asJSON)
			})
		},
	}
	c.Flags().StringVar(&o.Backend, "backend", "auto", "file backend: auto, overlay, btrfs, reflink or copy")
	c.Flags().StringVar(&o.Name, "name", "", "workspace name (default: the directory's name)")
	c.Flags().BoolVar(&o.Net, "net", false, "give every run its own network namespace and address")
	c.Flags().StringArrayVar(&groups, "group", nil, "let this group's members (a name or gid) see and act on the workspace through the daemon; repeatable")
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	c.Flags().BoolVar(&force, "force", false, "take / , a home directory or a directory holding another person's files too")
	return c
}

func (a *app) printInit(ref engine.Ref, asJSON bool) error {
	if asJSON {
		return a.printJSON(ref)
	}
	fmt.Fprintf(a.stdout, "workspace %s (%s) at %s, backend %s; source run %s (%s)\n",
		ref.Workspace.Name, ref.Workspace.ID, ref.Workspace.Path, ref.Workspace.Backend, ref.Run.Name, ref.Run.ID)
	if cwd, err := os.Getwd(); err == nil && ref.Workspace.Backend == "overlay" && fstree.Within(cwd, ref.Workspace.Path) {
		fmt.Fprintf(a.stderr, "tine: your shell is inside %s: run 'cd %s' to see the mounted files\n", ref.Workspace.Path, cwd)
	}
	return nil
}

// groupIDs resolves group names or numbers to gids.
func groupIDs(names []string) ([]int, error) {
	var out []int
	for _, n := range names {
		g, err := user.LookupGroup(n)
		if err != nil {
			if g, err = user.LookupGroupId(n); err != nil {
				return nil, fmt.Errorf("--group %s: no such group", n)
			}
		}
		id, err := strconv.Atoi(g.Gid)
		if err != nil {
			return nil, fmt.Errorf("--group %s: gid %q", n, g.Gid)
		}
		out = append(out, id)
	}
	return out, nil
}
