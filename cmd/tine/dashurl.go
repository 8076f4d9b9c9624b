package main

import (
	"net"
	"net/url"
)

// dashboardURL is the address a person opens to see the dashboard served
// at addr (a TCP listener's): its token in the query, which the dashboard
// moves into a cookie at the first visit, and a host a browser reaches
// (the loopback for a listener on every address).
func dashboardURL(addr net.Addr, token string) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return ""
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
		if ip.To4() == nil {
			host = "::1"
		}
	}
	u := url.URL{Scheme: "http", Host: net.JoinHostPort(host, port), Path: "/ui/"}
	if token != "" {
		u.RawQuery = url.Values{"token": {token}}.Encode()
	}
	return u.String()
}
