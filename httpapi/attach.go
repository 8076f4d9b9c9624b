package httpapi

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/internal/fdpass"
	"github.com/tinehq/tine/internal/runenv"
	"github.com/tinehq/tine/runtime"
	"github.com/tinehq/tine/supervisor"
)

// AttachRequest is the body of POST /v1/runs/{ref}/attach: tine exec
// through the daemon, with the caller's own standard streams. The daemon
// answers 101 (Upgrade: tine-exec) and then, on the same unix socket
// connection, receives the caller's stdin, stdout and stderr as three file
// descriptors (SCM_RIGHTS, beside one byte) and passes them to the run's
// supervisor, so output streams straight to the caller and a terminal
// stays a terminal. It then writes {"pid":N} once the command runs and
// {"exit":N} (with "error" when it could not start) once it ends; the
// caller may write {"signal":N} lines meanwhile, forwarded to the command.
type AttachRequest struct {
	Args []string `json:"args"`
	Env  []string `json:"env"` // the caller's environment
	Cwd  string   `json:"cwd"` // the caller's directory: kept when inside the workspace
	Keep bool     `json:"keep,omitempty"`
	// Tty says the three descriptors are the slave of a pseudo-terminal
	// the caller allocated (tine exec -t): it becomes the command's
	// controlling terminal (see supervisor.Exec).
	Tty bool `json:"tty,omitempty"`
}

// AttachUpgrade is the protocol the attach route switches to.
const AttachUpgrade = "tine-exec"

// AttachLine is one line the daemon writes on an attached connection.
type AttachLine struct {
	Pid   int    `json:"pid,omitempty"`
	Exit  *int   `json:"exit,omitempty"`
	Error string `json:"error,omitempty"`
}

func (s *Server) attach(w http.ResponseWriter, r *http.Request) {
	var req AttachRequest
	if !s.personOnly(w, r) || !decodeOrFail(w, r, &req) {
		return
	}
	if len(req.Args) == 0 {
		writeErr(w, fmt.Errorf("exec needs a command: %w", tine.ErrInvalid))
		return
	}
	ref, err := s.e.FindRun(r.Context(), r.PathValue("ref"))
	if err == nil && !ref.Run.Active() {
		err = fmt.Errorf("run %s is %s: %w", ref.Run.Name, ref.Run.State, tine.ErrState)
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	st, _ := s.rt.ProcState(ref)
	_, cl, err := s.rt.Client(ctxOf(r), ref.Run.ID)
	if err != nil {
		writeErr(w, err)
		return
	}
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		writeErr(w, fmt.Errorf("attach needs a connection of its own: %v: %w", err, tine.ErrUnsupported))
		return
	}
	defer conn.Close()
	conn.SetDeadline(time.Time{})
	uc, ok := unixConn(conn)
	if !ok {
		fmt.Fprint(conn, "HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n")
		return
	}
	fmt.Fprintf(brw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: %s\r\nConnection: Upgrade\r\n\r\n", AttachUpgrade)
	brw.Flush()
	files, err := receiveStreams(uc)
	if err != nil {
		return
	}
	defer closeFiles(files[:])
	args, note := s.rt.ExecArgs(ctxOf(r), ref, req.Args)
	if note != "" {
		fmt.Fprintf(files[2], "tine: note: %s\n", note)
	}
	x := supervisor.Exec{Args: args, Env: runenv.For(ref.Workspace, ref.Run, req.Env, peerUID(r)), Dir: dirIn(ref.Workspace.Path, req.Cwd), Tty: req.Tty}
	sigs := make(chan os.Signal, 8)
	go forwardSignals(brw.Reader, sigs)
	enc := json.NewEncoder(conn)
	code, err := cl.Exec(ctxOf(r), x, files, sigs, func(pid int) { enc.Encode(AttachLine{Pid: pid}) })
	// A supervisor launched for this command is stopped before the caller
	// hears the command ended, as tine exec does it locally: its next
	// command then never meets it going away.
	if st != runtime.ProcRunning && !req.Keep {
		s.rt.StopIdle(r.Context(), ref.Run.ID)
	}
	line := AttachLine{Exit: &code}
	if err != nil {
		line.Error = err.Error()
	}
	enc.Encode(line)
}

// dirIn is the caller's directory when it lies inside the workspace, else
// the workspace path.
func dirIn(ws, cwd string) string {
	if rel, err := filepath.Rel(ws, cwd); err == nil && filepath.IsLocal(rel) {
		return filepath.Join(ws, rel)
	}
	return ws
}

// receiveStreams reads the three descriptors the caller sends.
func receiveStreams(uc *net.UnixConn) ([3]*os.File, error) {
	var files [3]*os.File
	buf, oob := make([]byte, 1), make([]byte, syscall.CmsgSpace(3*4))
	uc.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, oobn, _, _, err := uc.ReadMsgUnix(buf, oob)
	uc.SetReadDeadline(time.Time{})
	if err != nil {
		return files, err
	}
	got, err := fdpass.Files(oob[:oobn], "caller")
	if err != nil || len(got) != 3 {
		for _, f := range got {
			f.Close()
		}
		return files, fmt.Errorf("attach: want 3 descriptors, got %d (%v)", len(got), err)
	}
	copy(files[:], got)
	return files, nil
}

func closeFiles(files []*os.File) {
	for _, f := range files {
		if f != nil {
			f.Close()
		}
	}
}

// forwardSignals reads {"signal":N} lines into sigs until the caller hangs
// up, which sends the command SIGHUP, as a terminal's hangup would (once
// the command has ended, nobody reads it).
func forwardSignals(r *bufio.Reader, sigs chan<- os.Signal) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var m struct {
			Signal int `json:"signal"`
		}
		if json.Unmarshal(sc.Bytes(), &m) == nil && m.Signal > 0 {
			select {
			case sigs <- syscall.Signal(m.Signal):
			default:
			}
		}
	}
	select {
	case sigs <- syscall.SIGHUP:
	default:
	}
}
