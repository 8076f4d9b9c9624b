package livefork

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// resumeHook gives tine the restored tree between criu's detaching from
// it and criu's exit. criu restore --leave-stopped sends the tree SIGSTOP
// as it detaches; once criu exits, the stopped tree is an orphaned
// process group (--shell-job gave it criu's session), which the kernel
// sends SIGHUP and SIGCONT: it would die, or run unconfined. So criu's
// post-resume action script, run before criu exits, tells tine the root's
// pid through one FIFO and waits on another until tine has confined the
// tree and let it run; if tine says no, is gone or does not answer in a
// minute, the script kills the root and its process group. (criu closes
// every descriptor but the standard ones in its scripts, hence FIFOs in
// the restore's work directory, which the fork sees at the same path.)
type resumeHook struct {
	script      string
	notify, ack *os.File // opened read-write by tine: neither end blocks
	notifyPath  string
	ackPath     string
}

// resumeScript is the action script; %[1]q and %[2]q are the FIFOs.
const resumeScript = `#!/bin/sh
[ "$CRTOOLS_SCRIPT_ACTION" = post-resume ] || exit 0
timeout 60 sh -c 'echo "$CRTOOLS_INIT_PID" >%[1]q && read -r ok <%[2]q && [ "$ok" = ok ]' && exit 0
pgid=$(cut -d' ' -f5 /proc/"$CRTOOLS_INIT_PID"/stat)
kill -KILL -- "-$pgid" "$CRTOOLS_INIT_PID"
exit 1
`

// newResumeHook writes the script and makes the FIFOs in dir.
func newResumeHook(dir string) (*resumeHook, error) {
	h := &resumeHook{script: filepath.Join(dir, "post-resume.sh"),
		notifyPath: filepath.Join(dir, "restored"), ackPath: filepath.Join(dir, "released")}
	if err := os.WriteFile(h.script, fmt.Appendf(nil, resumeScript, h.notifyPath, h.ackPath), 0o700); err != nil {
		return nil, fmt.Errorf("criu's action script: %w", err)
	}
	for _, p := range []string{h.notifyPath, h.ackPath} {
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			return nil, fmt.Errorf("criu's action script: %w", err)
		}
	}
	var err error
	if h.notify, err = os.OpenFile(h.notifyPath, os.O_RDWR, 0); err != nil {
		return nil, err
	}
	if h.ack, err = os.OpenFile(h.ackPath, os.O_RDWR, 0); err != nil {
		h.notify.Close()
		return nil, err
	}
	return h, nil
}

func (h *resumeHook) close() {
	h.notify.Close()
	h.ack.Close()
}

// run runs restore (criu) and, when criu's script gives the restored
// root's pid, release on it, answering the script with its outcome.
func (h *resumeHook) run(restore func() error, release func(nspid int) error) error {
	done := make(chan error, 1)
	go func() { done <- restore() }()
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(h.notify).ReadString('\n')
		line <- s
	}()
	select {
	case err := <-done:
		h.notify.Close() // ends the reader
		if err == nil {
			err = fmt.Errorf("%w: criu restore ran no post-resume script", ErrCRIUFailed)
		}
		return err
	case s := <-line:
		nspid, err := strconv.Atoi(strings.TrimSpace(s))
		if err == nil {
			err = release(nspid)
		} else {
			err = fmt.Errorf("%w: criu's post-resume script said %q", ErrCRIUFailed, s)
		}
		answer := "ok\n"
		if err != nil {
			answer = "no\n"
		}
		h.ack.WriteString(answer)
		return errors.Join(err, <-done)
	}
}
