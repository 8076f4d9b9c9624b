package httpapi_test

import (
	"context"
	"net/http"
	"sort"
	"sync"
	"testing"
	"time"
)

// BenchmarkAPI measures GET /v1/runs under 100 concurrent clients against
// the same query made in-process (the engine call the handler wraps), for
// the ratio; it reports the latency percentiles the clients saw.
//
//	go test ./httpapi -run '^$' -bench API -benchtime 2000x
func BenchmarkAPI(b *testing.B) {
	srv, e := newAPI(b, "")
	b.Run("engine", func(b *testing.B) {
		for range b.N {
			if _, err := e.Records(context.Background(), ""); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("http-100-clients", func(b *testing.B) {
		const clients = 100
		var mu sync.Mutex
		var lat []time.Duration
		var wg sync.WaitGroup
		per := (b.N + clients - 1) / clients
		b.ResetTimer()
		for range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				mine := make([]time.Duration, 0, per)
				for range per {
					t0 := time.Now()
					resp, err := srv.Client().Get(srv.URL + "/v1/runs")
					if err != nil || resp.StatusCode != http.StatusOK {
						b.Error(err)
						return
					}
					resp.Body.Close()
					mine = append(mine, time.Since(t0))
				}
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
			}()
		}
		wg.Wait()
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	})
}
