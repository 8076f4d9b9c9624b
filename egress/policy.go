package egress

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Rule allows one destination: a host name (exact, or "*.example.com" for
// its subdomains) or an IPv4 prefix, on one port or, with Port 0, any.
type Rule struct {
	Host string       `json:"host,omitempty"`
	Net  netip.Prefix `json:"net,omitzero"`
	Port uint16       `json:"port,omitempty"`
}

// String is the rule as tine.toml writes it.
func (r Rule) String() string {
	s := r.Host
	if s == "" {
		s = r.Net.String()
	}
	if r.Port != 0 {
		s += ":" + strconv.Itoa(int(r.Port))
	}
	return s
}

// Policy is what a run may reach besides its own loopback; everything
// else is refused and recorded. Upstream are the name servers (ip:port)
// the resolver asks, from the host's network.
type Policy struct {
	Rules    []Rule   `json:"rules"`
	Upstream []string `json:"upstream"`
}

// ParseRule reads "host[:port]", "*.domain[:port]", "a.b.c.d[/bits][:port]".
func ParseRule(s string) (Rule, error) {
	s = strings.TrimSpace(s)
	host, port := s, ""
	if i := strings.LastIndexByte(s, ':'); i >= 0 {
		host, port = s[:i], s[i+1:]
	}
	var r Rule
	if port != "" {
		p, err := strconv.ParseUint(port, 10, 16)
		if err != nil || p == 0 {
			return Rule{}, fmt.Errorf("egress %q: port %q is not 1-65535", s, port)
		}
		r.Port = uint16(p)
	}
	if pfx, err := netip.ParsePrefix(host); err == nil {
		if !pfx.Addr().Is4() {
			return Rule{}, fmt.Errorf("egress %q: runs have IPv4 only", s)
		}
		r.Net = pfx.Masked()
		return r, nil
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if !a.Is4() {
			return Rule{}, fmt.Errorf("egress %q: runs have IPv4 only", s)
		}
		r.Net = netip.PrefixFrom(a, 32)
		return r, nil
	}
	name := strings.ToLower(strings.TrimSuffix(host, "."))
	if !validName(strings.TrimPrefix(name, "*.")) {
		return Rule{}, fmt.Errorf("egress %q: not a host name, address or prefix", s)
	}
	r.Host = name
	return r, nil
}

// ParseRules reads every entry of a list, naming the first bad one.
func ParseRules(list []string) ([]Rule, error) {
	out := make([]Rule, 0, len(list))
	for _, s := range list {
		r, err := ParseRule(s)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func validName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// Ports returns the ports the rules allow for host name, and whether any
// rule names it; a 0 among them means every port.
func (p Policy) Ports(name string) ([]uint16, bool) {
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	var ports []uint16
	found := false
	for _, r := range p.Rules {
		if r.Host == "" || !matches(r.Host, name) {
			continue
		}
		found = true
		if !slices.Contains(ports, r.Port) {
			ports = append(ports, r.Port)
		}
	}
	return ports, found
}

func matches(pattern, name string) bool {
	if rest, ok := strings.CutPrefix(pattern, "*."); ok {
		return strings.HasSuffix(name, "."+rest)
	}
	return pattern == name
}

// HostPorts lists the distinct ports of the host-name rules (0: any).
func (p Policy) HostPorts() []uint16 {
	var out []uint16
	for _, r := range p.Rules {
		if r.Host != "" && !slices.Contains(out, r.Port) {
			out = append(out, r.Port)
		}
	}
	slices.Sort(out)
	return out
}

// agentHosts are the APIs of the agents tine drives, and where their
// sign-ins refresh: Claude Code's (platform.claude.com for a Claude
// account's token) and codex's (chatgpt.com's backend and auth.openai.com
// when signed in with ChatGPT), as the real binaries name them.
var agentHosts = []string{"api.anthropic.com", "platform.claude.com", "api.openai.com", "chatgpt.com", "auth.openai.com"}

// Preset returns the rules a fork gets without asking: the APIs of the
// agents tine drives (agentHosts) and the package registries of the
// ecosystems whose manifests are at the top of the workspace dir.
func Preset(dir string) []Rule {
	hosts := slices.Clone(agentHosts)
	for file, registries := range ecosystems {
		if _, err := os.Lstat(filepath.Join(dir, file)); err == nil {
			hosts = append(hosts, registries...)
		}
	}
	slices.Sort(hosts)
	hosts = slices.Compact(hosts)
	out := make([]Rule, len(hosts))
	for i, h := range hosts {
		out[i] = Rule{Host: h, Port: 443}
	}
	return out
}

// ecosystems maps a manifest file to the registries its tools fetch from.
var ecosystems = map[string][]string{
	"package.json":     {"registry.npmjs.org", "registry.yarnpkg.com"},
	"go.mod":           {"proxy.golang.org", "sum.golang.org"},
	"requirements.txt": {"pypi.org", "files.pythonhosted.org"},
	"pyproject.toml":   {"pypi.org", "files.pythonhosted.org"},
	"Cargo.toml":       {"crates.io", "index.crates.io", "static.crates.io"},
	"Gemfile":          {"rubygems.org", "index.rubygems.org"},
}

// Nameservers reads the name servers of a resolv.conf text, as ip:53.
func Nameservers(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "nameserver" {
			if a, err := netip.ParseAddr(f[1]); err == nil && a.Is4() {
				out = append(out, netip.AddrPortFrom(a, 53).String())
			}
		}
	}
	return out
}
