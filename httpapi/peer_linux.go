package httpapi

import (
	"context"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/tinehq/tine"
	"golang.org/x/sys/unix"
)

// ConnContext notes, for a connection on the unix socket, which run the
// peer process lives in (by its cgroup), so that every request from inside
// a run must carry that run's capability. Use it as http.Server.ConnContext.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return ctx
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return ctx
	}
	var cred *unix.Ucred
	raw.Control(func(fd uintptr) { cred, err = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) })
	if err != nil || cred == nil {
		return context.WithValue(ctx, peerKey, peer{run: unknownRun})
	}
	return context.WithValue(ctx, peerKey, peer{pid: int(cred.Pid), run: runOfPid(int(cred.Pid))})
}

// runOfPid finds the tine run whose cgroup holds pid, or "".
func runOfPid(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return unknownRun
	}
	for _, line := range strings.Split(string(b), "\n") {
		i := strings.Index(line, "/tine/")
		if i < 0 {
			continue
		}
		id := strings.SplitN(line[i+len("/tine/"):], "/", 2)[0]
		if tine.LooksLikeID(tine.PrefixRun, id) {
			return id
		}
	}
	return ""
}
