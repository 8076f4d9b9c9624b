package httpapi

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/tinehq/tine"
)

// TestInterruptible_AfterTheWorkFinished: the interrupt reaches the
// daemon after its work finished, so the daemon has no request of that id
// in progress (404). The client must still read the request's own answer,
// which says what became of the work; it used to abort the request and
// report that the daemon goes on with it (seen in CI once a discard
// became fast).
func TestInterruptible_AfterTheWorkFinished(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "d.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	started, canceled := make(chan struct{}), make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/work", func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-canceled                         // the work ended as the cancel came
		time.Sleep(200 * time.Millisecond) // its answer still on its way
		writeJSON(w, http.StatusOK, map[string]string{"done": "yes"})
	})
	mux.HandleFunc("POST /v1/requests/{id}/cancel", func(w http.ResponseWriter, r *http.Request) {
		writeErr(w, fmt.Errorf("no request of yours is in progress: %w", tine.ErrNotFound))
		close(canceled)
	})
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-started
		cancel()
	}()
	var out map[string]string
	c := NewClient(sock, nil)
	dctx, stop := context.WithTimeout(Interruptible(ctx), 10*time.Second)
	defer stop()
	if _, err := c.Do(dctx, http.MethodPost, "/v1/work", struct{}{}, &out); err != nil {
		t.Fatalf("the interrupted request's answer was cut off: %v", err)
	}
	if out["done"] != "yes" {
		t.Fatalf("answer %v, want the work's", out)
	}
}
