package egress

import (
	"net/netip"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/tinehq/tine/internal/account"
)

// Endpoint is an agent's API endpoint named by a variable of its
// environment (ANTHROPIC_BASE_URL=http://127.0.0.1:8080 and the like).
type Endpoint struct {
	Var  string // the variable that names it
	Host string // lower case, without brackets
	Port uint16 // the URL's, or its scheme's default
}

// Loopback reports whether the endpoint is on this machine's loopback
// (127.0.0.0/8, ::1 or localhost), which a run with a network of its own
// reaches only through [network] host_ports.
func (e Endpoint) Loopback() bool {
	if e.Host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(e.Host)
	return err == nil && a.IsLoopback()
}

// endpointSuffixes end the names of the variables agents read their API's
// URL from: ANTHROPIC_BASE_URL, OPENAI_BASE_URL, OPENAI_API_BASE, and an
// SDK's own FOO_API_URL. Proxy variables (HTTPS_PROXY) are not among
// them: a proxy on the host reaches anything, so only host_ports opens one.
var endpointSuffixes = []string{"_BASE_URL", "_API_BASE", "_API_URL"}

// Endpoints returns the API endpoints env names, each once, in the order
// of env: the values of its variables ending in _BASE_URL, _API_BASE or
// _API_URL that are http or https URLs with a host.
func Endpoints(env []string) []Endpoint {
	var out []Endpoint
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !slices.ContainsFunc(endpointSuffixes, func(s string) bool { return strings.HasSuffix(k, s) }) {
			continue
		}
		e, ok := endpointOf(k, v)
		if ok && !slices.ContainsFunc(out, func(o Endpoint) bool { return o.Host == e.Host && o.Port == e.Port }) {
			out = append(out, e)
		}
	}
	return out
}

func endpointOf(name, value string) (Endpoint, bool) {
	u, err := url.Parse(strings.TrimSpace(value))
	if err != nil || u.Hostname() == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return Endpoint{}, false
	}
	port := uint16(80)
	if u.Scheme == "https" {
		port = 443
	}
	if p := u.Port(); p != "" {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil || n == 0 {
			return Endpoint{}, false
		}
		port = uint16(n)
	}
	return Endpoint{Var: name, Host: strings.ToLower(u.Hostname()), Port: port}, true
}

// LoopbackPorts returns the ports of env's endpoints on the loopback,
// sorted, each once.
func LoopbackPorts(env []string) []int {
	var out []int
	for _, e := range Endpoints(env) {
		if e.Loopback() && !slices.Contains(out, int(e.Port)) {
			out = append(out, int(e.Port))
		}
	}
	slices.Sort(out)
	return out
}

// EndpointRules returns rules allowing env's endpoints that are not on the
// loopback: the API an agent is pointed at is part of its preset.
func EndpointRules(env []string) []Rule {
	var out []Rule
	for _, e := range Endpoints(env) {
		if e.Loopback() {
			continue
		}
		if a, err := netip.ParseAddr(e.Host); err == nil {
			if a.Is4() {
				out = append(out, Rule{Net: netip.PrefixFrom(a, 32), Port: e.Port})
			}
			continue
		}
		if validName(e.Host) {
			out = append(out, Rule{Host: e.Host, Port: e.Port})
		}
	}
	return out
}

// AgentPorts returns the loopback ports the agents of a process with
// environment env are pointed at: its endpoint variables' (LoopbackPorts)
// and the base_url of each model provider in codex's configuration
// ($CODEX_HOME/config.toml, else $HOME/.codex/config.toml), read from the
// host, where a fork's writes to its home do not reach.
func AgentPorts(env []string) []int {
	out := LoopbackPorts(env)
	for _, p := range codexPorts(env) {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

func codexPorts(env []string) []int {
	file := ""
	if v := account.Getenv(env, "CODEX_HOME"); v != "" {
		file = filepath.Join(v, "config.toml")
	} else if v := account.Getenv(env, "HOME"); v != "" {
		file = filepath.Join(v, ".codex", "config.toml")
	}
	if file == "" {
		return nil
	}
	var cfg struct {
		Providers map[string]struct {
			BaseURL string `toml:"base_url"`
		} `toml:"model_providers"`
	}
	if _, err := toml.DecodeFile(file, &cfg); err != nil {
		return nil
	}
	var vars []string
	for _, p := range cfg.Providers {
		vars = append(vars, "CODEX_BASE_URL="+p.BaseURL)
	}
	return LoopbackPorts(vars)
}

// AgentRules returns the host-name rules for the APIs env points its
// agents at beyond the preset: its endpoint variables' hosts
// (EndpointRules) and, for Claude Code on a cloud (CLAUDE_CODE_USE_BEDROCK,
// CLAUDE_CODE_USE_VERTEX), that cloud's endpoints in the region env names.
func AgentRules(env []string) []Rule {
	out := EndpointRules(env)
	get := func(k string) string { return account.Getenv(env, k) }
	on := func(k string) bool { v := get(k); return v != "" && v != "0" && !strings.EqualFold(v, "false") }
	region := func(def string, keys ...string) string {
		for _, k := range keys {
			if v := strings.ToLower(get(k)); v != "" && validName(v) {
				return v
			}
		}
		return def
	}
	var hosts []string
	if on("CLAUDE_CODE_USE_BEDROCK") {
		r := region("us-east-1", "AWS_REGION", "AWS_DEFAULT_REGION")
		hosts = append(hosts, "bedrock-runtime."+r+".amazonaws.com", "bedrock."+r+".amazonaws.com",
			"sts."+r+".amazonaws.com", "sts.amazonaws.com")
	}
	if on("CLAUDE_CODE_USE_VERTEX") {
		r := region("us-east5", "CLOUD_ML_REGION")
		hosts = append(hosts, r+"-aiplatform.googleapis.com", "aiplatform.googleapis.com", "oauth2.googleapis.com")
	}
	for _, h := range hosts {
		if validName(h) && !slices.Contains(out, Rule{Host: h, Port: 443}) {
			out = append(out, Rule{Host: h, Port: 443})
		}
	}
	return out
}
