package evidence

import (
	"strconv"
	"strings"
)

// FileDiff is what a unified diff says about one file.
type FileDiff struct {
	Path    string
	New     bool     // added (from /dev/null)
	Deleted bool     // deleted (to /dev/null)
	Added   []string // added lines, without the "+"
	Removed []string // removed lines, without the "-"
}

// ParseDiff reads a unified diff of several files, as tine diff writes it
// (---/+++ headers with a/ and b/ prefixes, @@ hunks). Hunk lengths are
// followed, so content lines that begin with "---" are not mistaken for
// headers. Lines it does not understand are skipped.
func ParseDiff(patch string) []FileDiff {
	var out []FileDiff
	var cur *FileDiff
	oldLeft, newLeft := 0, 0
	lines := strings.Split(patch, "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if oldLeft > 0 || newLeft > 0 {
			switch {
			case strings.HasPrefix(l, "+"):
				cur.Added = append(cur.Added, l[1:])
				newLeft--
			case strings.HasPrefix(l, "-"):
				cur.Removed = append(cur.Removed, l[1:])
				oldLeft--
			case strings.HasPrefix(l, `\`): // "\ No newline at end of file"
			default:
				oldLeft--
				newLeft--
			}
			continue
		}
		switch {
		case strings.HasPrefix(l, "--- ") && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "+++ "):
			from, to := strings.TrimPrefix(l, "--- "), strings.TrimPrefix(lines[i+1], "+++ ")
			out = append(out, FileDiff{New: from == "/dev/null", Deleted: to == "/dev/null"})
			cur = &out[len(out)-1]
			cur.Path = strings.TrimPrefix(to, "b/")
			if cur.Deleted {
				cur.Path = strings.TrimPrefix(from, "a/")
			}
			i++
		case strings.HasPrefix(l, "@@ ") && cur != nil:
			oldLeft, newLeft = hunkLengths(l)
		}
	}
	return out
}

// hunkLengths reads the line counts of "@@ -a,b +c,d @@" (a missing count
// is 1).
func hunkLengths(h string) (int, int) {
	f := strings.Fields(h)
	if len(f) < 3 {
		return 0, 0
	}
	return rangeLen(f[1]), rangeLen(f[2])
}

func rangeLen(r string) int {
	_, n, ok := strings.Cut(r[1:], ",")
	if !ok {
		return 1
	}
	v, err := strconv.Atoi(n)
	if err != nil {
		return 0
	}
	return v
}
