package cgroup

import (
	"reflect"
	"testing"
)

// The layout is parsed once and answered again while its hierarchies are
// still mounted; a mount point that is no cgroup file system (any more)
// makes it parse again.
func TestReadLayout_CachedWhileMounted(t *testing.T) {
	parsed, err := parseLayout()
	if err != nil {
		t.Skipf("no cgroup hierarchy here: %v", err)
	}
	if !parsed.mounted() {
		t.Fatalf("the parsed layout %+v does not read as mounted", parsed)
	}
	got, err := readLayout()
	if err != nil || !reflect.DeepEqual(got, parsed) {
		t.Fatalf("readLayout = %+v, %v; want %+v", got, err, parsed)
	}
	stale := layout{v2: t.TempDir()}
	if stale.mounted() {
		t.Fatal("a plain directory reads as a cgroup hierarchy")
	}
	layoutCache.Lock()
	layoutCache.l, layoutCache.ok = stale, true
	layoutCache.Unlock()
	if got, err := readLayout(); err != nil || !reflect.DeepEqual(got, parsed) {
		t.Fatalf("after its hierarchy went: %+v, %v; want the mount table's %+v", got, err, parsed)
	}
}

// BenchmarkReadLayout measures what each Load paid to find the hierarchies
// (parse: the mount table, in proportion to the host's mounts) against the
// cached layout's check (a statfs per hierarchy).
//
//	go test ./cgroup -run '^$' -bench ReadLayout -count 3
func BenchmarkReadLayout(b *testing.B) {
	if _, err := parseLayout(); err != nil {
		b.Skipf("no cgroup hierarchy here: %v", err)
	}
	b.Run("parse", func(b *testing.B) {
		for range b.N {
			parseLayout()
		}
	})
	b.Run("cached", func(b *testing.B) {
		for range b.N {
			readLayout()
		}
	})
}
