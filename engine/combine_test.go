package engine

import (
	"strings"
	"testing"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/layer"
	"github.com/tinehq/tine/merge"
)

func part(fork string, entries ...merge.Entry) *CombinePart {
	return &CombinePart{Run: &tine.Run{Name: fork}, Plan: &merge.Plan{Entries: entries}}
}

func take(path, typ string, ch layer.Kind) merge.Entry {
	return merge.Entry{Path: path, Action: merge.Take, Change: ch, Type: typ}
}

func TestJoinPlans(t *testing.T) {
	tests := []struct {
		name      string
		a, b      []merge.Entry
		conflicts []string // "path<-fork"
		entries   int
	}{
		{"disjoint files", []merge.Entry{take("a", "file", layer.Modified)}, []merge.Entry{take("b", "file", layer.Added)}, nil, 2},
		{"same file", []merge.Entry{take("s", "file", layer.Modified)}, []merge.Entry{take("s", "file", layer.Modified)}, []string{"s<-f1", "s<-f2"}, 2},
		{"a directory both make", []merge.Entry{take("d", "dir", layer.Added), take("d/x", "file", layer.Added)},
			[]merge.Entry{take("d", "dir", layer.Added), take("d/y", "file", layer.Added)}, nil, 3},
		{"a file where the other makes a directory", []merge.Entry{take("d", "file", layer.Added)},
			[]merge.Entry{take("d/y", "file", layer.Added)}, []string{"d<-f1", "d/y<-f2"}, 2},
		{"a directory deleted below which the other writes", []merge.Entry{take("d", "dir", layer.Deleted)},
			[]merge.Entry{take("d/y", "file", layer.Modified)}, []string{"d<-f1", "d/y<-f2"}, 2},
		{"a prefix that is not a parent", []merge.Entry{take("ab", "file", layer.Added)}, []merge.Entry{take("a", "file", layer.Added)}, nil, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan, forks := joinPlans([]*CombinePart{part("f1", tt.a...), part("f2", tt.b...)})
			var got []string
			for i, en := range plan.Entries {
				if en.Action == merge.Conflict {
					got = append(got, en.Path+"<-"+forks[i])
					if !strings.Contains(en.Reason, "taken from "+forks[i]+" and from ") {
						t.Errorf("reason %q", en.Reason)
					}
				}
			}
			if strings.Join(got, " ") != strings.Join(tt.conflicts, " ") || len(plan.Entries) != tt.entries || len(forks) != tt.entries {
				t.Errorf("conflicts %v, %d entries; want %v, %d", got, len(plan.Entries), tt.conflicts, tt.entries)
			}
		})
	}
}
