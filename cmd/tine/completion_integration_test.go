//go:build linux

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tinehq/tine/internal/testkit"
)

// shellCompletes asks each shell, with tine's completion script loaded,
// what it completes "tine diff " to: bash and zsh through the functions
// their completion systems call (bash-completion's word splitter and zsh's
// _describe stood in for), fish through complete -C.
var shellCompletes = map[string][]string{
	"bash": {"bash", "-c", `_get_comp_words_by_ref() { cur=${COMP_WORDS[COMP_CWORD]}; prev=${COMP_WORDS[COMP_CWORD-1]}; words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD; }
source <(tine completion bash)
COMP_WORDS=(tine diff ""); COMP_CWORD=2; COMP_LINE="tine diff "; COMP_POINT=${#COMP_LINE}
__start_tine tine "" diff 2>/dev/null
printf '%s\n' "${COMPREPLY[@]}"`},
	"zsh": {"zsh", "-c", `compdef() {}
_describe() { local a; for a in "${(@P)2}"; do print -r -- "${a%%:*}"; done; }
source <(tine completion zsh)
words=(tine diff ""); CURRENT=3; _tine`},
	"fish": {"fish", "-c", `tine completion fish | source; complete -C "tine diff "`},
}

// Each shell completes a run's name from the state directory (issue 28:
// tine __complete diff "" returned nothing), and a flag's words.
func TestCompletion_RunNamesPerShell(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	e := newEnv(t)
	ws := e.workspaceDir("comp")
	e.ok("init", ws)
	e.ok("fork", "comp/source", "--name", "try-sqlite")
	if out := e.ok("__complete", "diff", ""); !strings.Contains(out, "comp/try-sqlite\n") {
		t.Errorf("tine __complete diff \"\":\n%s", out)
	}
	if out := e.ok("__complete", "fork-run", "x", "--merge-mode", "au"); !strings.Contains(out, "auto_with_fallback\n") {
		t.Errorf("tine __complete fork-run --merge-mode au:\n%s", out)
	}
	path := filepath.Dir(tineBin) + ":" + os.Getenv("PATH")
	for shell, argv := range shellCompletes {
		t.Run(shell, func(t *testing.T) {
			if _, err := exec.LookPath(argv[0]); err != nil {
				t.Skipf("%s is not installed (.ci/run installs it)", shell)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
			cmd.Env = append(e.vars, "PATH="+path, "HOME="+e.tmp)
			cmd.Dir = e.tmp
			out, err := cmd.CombinedOutput()
			if !strings.Contains(string(out), "comp/try-sqlite\n") {
				t.Errorf("%s completes tine diff to (%v):\n%s", shell, err, out)
			}
		})
	}
}
