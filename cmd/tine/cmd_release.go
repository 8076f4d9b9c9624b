package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/internal/display"
	"github.com/tinehq/tine/internal/mnt"
)

func newRelease(a *app) *cobra.Command {
	var unmerged, force, asJSON bool
	c := &cobra.Command{
		Use:   "release WORKSPACE",
		Short: "Stop managing a workspace, leaving plain files as the source sees them",
		Long: `Unmounts the workspace and leaves its directory holding, as plain files,
exactly what the source run sees. Every fork is removed; forks with changes
never merged or promoted are refused (exit status 6) unless --unmerged. WORKSPACE is a path,
a name or an id.`,
		Example: `  tine release ~/src/app`,
		Args:    exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if err := cwdHolds(args[0]); err != nil {
				return err
			}
			ctx, stop := interruptible(c.Context())
			defer stop()
			o := outcome{before: "nothing was released", after: "the release was committed: " + args[0] + " holds the source's files, as plain files",
				watch: "tine ls shows whether " + args[0] + " is still managed"}
			if a.remote() {
				w, err := a.remoteRelease(ctx, args[0], unmerged || force)
				if err == nil {
					err = a.printReleased(w, asJSON)
				}
				return interrupted(ctx, err, err == nil, o)
			}
			return a.withEngine(ctx, func(e *engine.Engine) error {
				w, err := e.Release(a.progress(ctx, "releasing "+args[0], asJSON), args[0], unmerged || force)
				a.progressDone()
				if err == nil {
					err = a.printReleased(w, asJSON)
				}
				return interrupted(ctx, err, err == nil, o)
			})
		},
	}
	c.Flags().BoolVar(&unmerged, "unmerged", false, "remove forks even if their changes were never merged or promoted")
	deprecatedForce(c, &force, "--unmerged")
	c.Flags().BoolVar(&asJSON, "json", false, "print the released workspace as JSON")
	return c
}

func (a *app) printReleased(w *engine.Released, asJSON bool) error {
	if asJSON {
		return a.printJSON(w)
	}
	fmt.Fprintf(a.stdout, "released %s: %s holds plain files\n", w.Name, w.Path)
	if w.Aside != "" {
		fmt.Fprintf(a.stdout, "moved %s into %s: written beneath the workspace's mount (by a process whose directory was %s when tine init mounted over it), where the workspace did not see it\n",
			listSome(w.AsideNames, 3), w.Aside, w.Path)
	}
	return nil
}

// listSome is names quoted and joined, the first n of them and how many
// more.
func listSome(names []string, n int) string {
	q := make([]string, 0, n)
	for i, s := range names {
		if i == n {
			q = append(q, fmt.Sprintf("and %d more", len(names)-n))
			break
		}
		q = append(q, strconv.Quote(s))
	}
	return strings.Join(q, ", ")
}

// cwdHolds fails when this command's working directory is in the
// workspace mounted at ref (when ref is a path): the mount it keeps busy
// could not be released. A directory beneath the mount (a shell that was
// there before tine init) holds nothing, and passes.
func cwdHolds(ref string) error {
	abs, err := filepath.Abs(ref)
	if err != nil {
		return nil
	}
	cwd, err := os.Getwd()
	if _, in := below(cwd, abs); err != nil || !in {
		return nil
	}
	if ok, err := mnt.IsMountpoint(abs); err != nil || !ok {
		return nil
	}
	here, err1 := os.Stat(".")
	ws, err2 := os.Stat(abs)
	if err1 != nil || err2 != nil || here.Sys().(*syscall.Stat_t).Dev != ws.Sys().(*syscall.Stat_t).Dev {
		return nil
	}
	return fmt.Errorf("your current directory %s is in the workspace, and keeps it mounted: cd out of it (cd %s) and retry: %w", display.Text(cwd), display.Text(filepath.Dir(abs)), tine.ErrBusy)
}
