package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"github.com/tinehq/tine/engine"
)

// trashEnv, set to "keep", leaves what a release or discard moved into the
// trash for tine gc or the daemon instead of starting tine gc --trash (for
// benchmarks that time the deletion apart, and tests of the trash).
const trashEnv = "TINE_TRASH"

// emptyTrashLater starts, when e moved something into the trash, a
// detached tine gc --trash that deletes it after this command has exited:
// a release or discard returns once its files are renamed away. Failing to
// start it loses nothing: tine gc and the daemon's sweep empty the trash.
func (a *app) emptyTrashLater(e *engine.Engine) {
	if !e.TrashPending() || os.Getenv(trashEnv) == "keep" {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return
	}
	defer devnull.Close()
	cmd := exec.Command(exe, "gc", "--trash", "--home", e.Home())
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, devnull, devnull
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if cmd.Start() == nil {
		cmd.Process.Release()
	}
}

// emptyTrash is tine gc --trash: it empties the trash without opening the
// store, waiting for another tine emptying it.
func (a *app) emptyTrash(ctx context.Context, asJSON bool) error {
	opts, err := a.engineOptions()
	if err != nil {
		return err
	}
	n, err := engine.EmptyTrash(ctx, a.home, true, opts...)
	if err != nil {
		return err
	}
	if asJSON {
		return a.printJSON(map[string]int{"deleted": n})
	}
	fmt.Fprintf(a.stdout, "emptied the trash: %d entry(ies) deleted\n", n)
	return nil
}
