package main

import (
	"net"
	"testing"
)

// The dashboard's URL opens as printed: a host a browser reaches, the
// token in the query.
func TestDashboardURL(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:8080": "http://127.0.0.1:8080/ui/?token=t0k",
		"0.0.0.0:8080":   "http://127.0.0.1:8080/ui/?token=t0k",
		"[::]:9":         "http://[::1]:9/ui/?token=t0k",
		"10.0.0.5:80":    "http://10.0.0.5:80/ui/?token=t0k",
	} {
		a, err := net.ResolveTCPAddr("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := dashboardURL(a, "t0k"); got != want {
			t.Errorf("dashboardURL(%s) = %q, want %q", addr, got, want)
		}
	}
}
