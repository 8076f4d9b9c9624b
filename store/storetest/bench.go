package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/tinehq/tine"
)

// BenchmarkFork measures the store's share of one fork: the transactions
// engine.Fork of one copy runs, in its order (counted on the engine at the
// time of writing): seven Views (find the parent by name, lock it, list the
// names taken, read the version three times while sealing, read back the
// records for the manifests) and three Updates (revoke the parent's
// capability, record the fork, issue the parent's and the fork's
// capabilities). Each store's benchmark calls it, so their figures compare;
// the difference is what a store adds to every fork.
func BenchmarkFork(b *testing.B, fresh Fresh) {
	s := fresh(b)()
	ctx := context.Background()
	Seed(b, s)
	Update(b, s, func(tx tine.Tx) error {
		return errors.Join(tx.PutRun(&tine.Run{ID: "r1", Workspace: "w1", Name: "source", Role: tine.RoleSource, State: tine.StateActive, Base: "v0"}),
			tx.PutVersion(&tine.Version{ID: "v0", Workspace: "w1", Kind: tine.VersionFork, Layers: []string{"l0"}}))
	})
	var landed bool
	i := 0
	for b.Loop() {
		i++
		id := fmt.Sprint(i)
		steps := []struct {
			write bool
			fn    func(tine.Tx) error
		}{
			{false, func(tx tine.Tx) error {
				_, err1 := tx.WorkspaceByName("name-w1")
				_, err2 := tx.RunByName("w1", "source")
				return errors.Join(err1, err2)
			}},
			{false, func(tx tine.Tx) error { _, err := tx.Run("r1"); return err }},
			{false, func(tx tine.Tx) error { _, err := tx.Runs(tine.RunFilter{Workspace: "w1"}); return err }},
			{true, func(tx tine.Tx) error {
				if err := tx.RevokeCapability("r1"); err != nil && !errors.Is(err, tine.ErrNotFound) {
					return err
				}
				return nil
			}},
			{false, func(tx tine.Tx) error { _, err := tx.Version("v0"); return err }},
			{false, func(tx tine.Tx) error { _, err := tx.Version("v0"); return err }},
			{false, func(tx tine.Tx) error { _, err := tx.Version("v0"); return err }},
			{true, forkTx(id, "r1", "req"+id, 1, nil, &landed)},
			{false, func(tx tine.Tx) error {
				_, err1 := tx.Workspace("w1")
				_, err2 := tx.Run("r1")
				_, err3 := tx.Run("r" + id + ".0")
				_, err4 := tx.Version("v" + id)
				_, err5 := tx.Group("g" + id)
				return errors.Join(err1, err2, err3, err4, err5)
			}},
			{true, func(tx tine.Tx) error {
				return errors.Join(tx.SetCapability(&tine.Capability{Run: "r1", Secret: []byte("parent")}),
					tx.SetCapability(&tine.Capability{Run: "r" + id + ".0", Secret: []byte("fork")}))
			}},
		}
		for _, st := range steps {
			do := s.View
			if st.write {
				do = s.Update
			}
			if err := do(ctx, st.fn); err != nil {
				b.Fatal(err)
			}
		}
	}
}
