package main

import (
	"context"
	"os"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/internal/account"
)

func newShell(a *app) *cobra.Command {
	var keep bool
	c := &cobra.Command{
		Use:   "shell RUN",
		Short: "Open the owner's login shell inside RUN, on a terminal of its own",
		Long: `Opens the login shell (-l) of the workspace's owner (the one /etc/passwd names
for them, else /bin/sh) inside RUN, as them, at the workspace path (or the
directory you are in, mapped into RUN, as tine exec does), on a terminal of
its own: the same as tine exec -it RUN -- SHELL -l. Its exit status is
tine's.`,
		Example: `  tine shell app/source-1`,
		Args:    exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			shell, err := a.ownerShell(c.Context(), args[0])
			if err != nil {
				return err
			}
			return a.exec(c, args[0], []string{shell, "-l"}, keep, true)
		},
	}
	c.Flags().BoolVar(&keep, "keep", false, "keep the supervisor this shell launched (RUN had none) running afterwards")
	return c
}

// ownerShell is the login shell of the owner of run ref's workspace.
// Through the daemon it is the caller's own: only the owner (or a member
// of a group the workspace is shared with) gets that far.
func (a *app) ownerShell(ctx context.Context, ref string) (string, error) {
	if a.remote() {
		return account.Lookup(os.Getuid(), os.Getgid()).Shell, nil
	}
	var shell string
	err := a.withEngine(ctx, func(e *engine.Engine) error {
		r, err := e.FindRun(ctx, ref)
		if err != nil {
			return err
		}
		shell = engine.OwnerAccount(r.Workspace).Shell
		return nil
	})
	return shell, err
}
