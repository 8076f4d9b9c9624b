package classify

import (
	"net/url"
	"strings"

	"github.com/tinehq/tine/internal/lazyre"
)

func dbTools() {
	register(map[string]handler{
		"psql":              psqlTool,
		"mysql":             mysqlTool,
		"mariadb":           mysqlTool,
		"sqlite3":           sqliteTool,
		"sqlite":            sqliteTool,
		"duckdb":            sqliteTool,
		"sqlcmd":            sqlFlagTool(fset("-Q", "-q"), fset("-S"), fset("-i")),
		"clickhouse-client": sqlFlagTool(fset("-q", "--query"), fset("-h", "--host"), fset("--queries-file")),
		"cockroach":         sqlFlagTool(fset("-e", "--execute"), fset("--host", "--url"), fset("-f", "--file")),
		"mongosh":           mongoTool,
		"mongo":             mongoTool,
		"redis-cli":         redisTool,
		"dropdb":            dbAdmin("dropdb drops a database", DestructiveDatabase),
		"dropuser":          dbAdmin("dropuser drops a role"),
		"createdb":          func(c *call) finding { return rev("createdb creates a database") },
		"pg_dump":           func(c *call) finding { return ro("pg_dump reads a database") },
		"mysqldump":         func(c *call) finding { return ro("mysqldump reads a database") },
		"pg_restore":        pgRestore,
		"mysqladmin":        mysqladminTool,
	})
}

// dbTarget describes where a database client connects.
type dbTarget struct {
	remote  bool // a host that is not this machine or a compose service
	unknown bool // the target comes from a variable
}

// sqlRisk is the effect of a batch of SQL.
type sqlRisk int

const (
	sqlRead    sqlRisk = iota
	sqlWrite           // INSERT, UPDATE/DELETE with WHERE, GRANT
	sqlSchema          // CREATE, ALTER, RENAME
	sqlDestroy         // DROP, TRUNCATE, DELETE/UPDATE without WHERE
	sqlUnknown         // SQL not shown (a file, an unknown pipe)
)

var (
	sqlComment = lazyre.New(`(?s)--[^\n]*|/\*.*?\*/`)
	sqlString  = lazyre.New(`'(?:[^']|'')*'`)
	sqlNoWhere = lazyre.New(`(?i)\bwhere\s+(1\s*=\s*1|true)\b`)
	sqlDropCol = lazyre.New(`(?i)^alter\s+table\b.*\bdrop\b`)
	sqlWhere   = lazyre.New(`(?i)\bwhere\b`)
	mongoDrop  = lazyre.New(`\.(drop|dropDatabase|dropIndexes)\s*\(|\.(deleteMany|remove)\s*\(\s*\{\s*\}\s*\)`)
	mongoWrite = lazyre.New(`\.(insert\w*|update\w*|delete\w*|replace\w*|createCollection|createIndex|bulkWrite|findOneAnd\w+)\s*\(`)
)

// sqlEffect judges SQL text statement by statement; the worst one wins.
func sqlEffect(sql string) sqlRisk {
	sql = sqlString().ReplaceAllString(sqlComment().ReplaceAllString(sql, " "), "''")
	worst := sqlRead
	for _, st := range strings.Split(sql, ";") {
		worst = max(worst, stmtEffect(strings.TrimSpace(st)))
	}
	return worst
}

func stmtEffect(st string) sqlRisk {
	fs := strings.Fields(strings.ToLower(st))
	if len(fs) == 0 {
		return sqlRead
	}
	switch fs[0] {
	case "drop", "truncate":
		return sqlDestroy
	case "delete", "update":
		if !sqlWhere().MatchString(st) || sqlNoWhere().MatchString(st) {
			return sqlDestroy
		}
		return sqlWrite
	case "alter":
		if sqlDropCol().MatchString(st) {
			return sqlDestroy
		}
		return sqlSchema
	case "create", "rename", "comment":
		return sqlSchema
	case "insert", "replace", "merge", "upsert", "copy", "load", "grant", "revoke", "call", "exec", "execute", "do":
		return sqlWrite
	case "with":
		for _, kw := range []string{"delete", "update", "insert"} {
			if strings.Contains(" "+strings.Join(fs, " ")+" ", " "+kw+" ") {
				return stmtEffect(st[strings.Index(strings.ToLower(st), kw):])
			}
		}
	}
	return sqlRead
}

// dbFinding turns a SQL risk at a target into a finding.
func dbFinding(c *call, risk sqlRisk, t dbTarget) finding {
	what := c.name
	if (t.remote || t.unknown || prodEnv(c)) && risk > sqlRead {
		where := "a remote database"
		if !t.remote {
			where = "a database the line does not name (it may be remote)"
		}
		f := ext(what + " changes " + where)
		if risk == sqlDestroy {
			f.cats = append(f.cats, DestructiveDatabase)
		}
		return f
	}
	switch risk {
	case sqlDestroy:
		return irr(what+" runs destructive SQL (DROP/TRUNCATE/DELETE or UPDATE without WHERE)", DestructiveDatabase)
	case sqlSchema:
		return irr(what+" changes the schema", SchemaMigration)
	case sqlUnknown:
		return irr(what+" runs SQL that the line does not show", SchemaMigration)
	case sqlWrite:
		return irr(what + " changes rows")
	}
	return ro(what + " runs a read-only query")
}

// stdinSQL returns the risk of SQL read from stdin, or ok=false if none.
func stdinSQL(c *call) (sqlRisk, bool) {
	switch {
	case c.in == nil:
		return sqlRead, false
	case c.in.known:
		return sqlEffect(c.in.text), true
	}
	return sqlUnknown, true
}

// hostRemote reports whether h names another machine. Names without a dot
// are taken for local compose services.
func hostRemote(h string) bool {
	h = strings.Trim(strings.ToLower(h), "[]")
	if i := strings.LastIndexByte(h, ':'); i > 0 && !strings.Contains(h[:i], ":") {
		h = h[:i]
	}
	switch {
	case h == "" || strings.HasPrefix(h, "/") || h == "localhost" || h == "::1" || h == "0.0.0.0":
		return false
	case strings.HasPrefix(h, "127.") || h == "host.docker.internal" || strings.HasSuffix(h, ".localhost"):
		return false
	}
	return strings.Contains(h, ".")
}

// urlTarget reads a connection URL ("postgres://u@host/db", "jdbc:...").
func urlTarget(a arg) (dbTarget, bool) {
	s := strings.TrimPrefix(a.s, "jdbc:")
	if !strings.Contains(s, "://") {
		return dbTarget{}, false
	}
	if a.lead {
		return dbTarget{unknown: true}, true
	}
	u, err := url.Parse(s)
	if err != nil {
		return dbTarget{unknown: true}, true
	}
	if strings.HasPrefix(u.Scheme, "sqlite") || u.Scheme == "file" {
		return dbTarget{}, true
	}
	return dbTarget{remote: hostRemote(u.Host)}, true
}

// target finds where c connects: host options, URL operands, env.
func target(c *call, hostFlags flags, ops []arg) dbTarget {
	for name := range hostFlags {
		if h, ok := flagValue(c.args, name); ok {
			return dbTarget{remote: hostRemote(h), unknown: strings.HasPrefix(h, "$")}
		}
	}
	for _, o := range ops {
		if t, ok := urlTarget(o); ok {
			return t
		}
		if o.lead {
			return dbTarget{unknown: true}
		}
	}
	for _, k := range []string{"PGHOST", "MYSQL_HOST"} {
		if h, ok := c.env[k]; ok {
			return dbTarget{remote: hostRemote(h)}
		}
	}
	for _, k := range []string{"DATABASE_URL", "DB_URL"} {
		if v, ok := c.env[k]; ok {
			t, _ := urlTarget(arg{s: v})
			return t
		}
	}
	return dbTarget{}
}

// prodEnv reports whether the line points the tool at production
// (RAILS_ENV=production, --env=production, NODE_ENV=prod ...).
func prodEnv(c *call) bool {
	for k, v := range c.env {
		if strings.HasSuffix(k, "ENV") && strings.HasPrefix(strings.ToLower(v), "prod") {
			return true
		}
	}
	for i, a := range c.args {
		s := strings.ToLower(a.s)
		if strings.Contains(s, "env=prod") || strings.Contains(s, "environment=prod") {
			return true
		}
		if (s == "-e" || s == "--env" || s == "--environment") && i+1 < len(c.args) && strings.HasPrefix(strings.ToLower(c.args[i+1].s), "prod") {
			return true
		}
	}
	return false
}

var psqlValued = fset("-c", "--command", "-f", "--file", "-h", "--host", "-p", "--port", "-U",
	"--username", "-d", "--dbname", "-v", "--set", "--variable", "-o", "--output", "-F", "-R", "-P",
	"--pset", "-L", "--log-file", "-T")

func psqlTool(c *call) finding {
	ops := positionals(c.args, psqlValued)
	if d, ok := flagValue(c.args, "-d", "--dbname"); ok {
		ops = append(ops, arg{s: d})
	}
	t := target(c, fset("-h", "--host"), ops)
	return clientSQL(c, t, allValues(c.args, "-c", "--command"), hasFlag(c.args, "-f", "--file"))
}

// clientSQL judges inline SQL, a file, or stdin.
func clientSQL(c *call, t dbTarget, sqls []string, file bool) finding {
	risk, given := sqlRead, false
	for _, s := range sqls {
		risk, given = max(risk, sqlEffect(s)), true
	}
	if file {
		risk, given = max(risk, sqlUnknown), true
	}
	if r, ok := stdinSQL(c); ok && !given {
		risk, given = r, true
	}
	if !given {
		return dbInteractive(c, t)
	}
	return dbFinding(c, risk, t)
}

func dbInteractive(c *call, t dbTarget) finding {
	if t.remote {
		return ext(c.name + " opens a session on a remote database")
	}
	return rev("interactive " + c.name + " session")
}

func allValues(args []arg, names ...string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		for _, n := range names {
			if args[i].s == n && i+1 < len(args) {
				out = append(out, args[i+1].s)
				i++
				break
			}
			if v, ok := flagValue(args[i:i+1], n); ok {
				out = append(out, v)
				break
			}
		}
	}
	return out
}

var mysqlValued = fset("-e", "--execute", "-h", "--host", "-u", "--user", "-P", "--port",
	"-D", "--database", "-S", "--socket", "--defaults-file", "--default-character-set")

func mysqlTool(c *call) finding {
	ops := positionals(c.args, mysqlValued)
	t := target(c, fset("-h", "--host"), ops)
	return clientSQL(c, t, allValues(c.args, "-e", "--execute"), false)
}

// sqliteTool: "sqlite3 FILE [SQL]"; the database is a file in the
// workspace, so a fork contains it.
func sqliteTool(c *call) finding {
	ops := positionals(c.args, fset("-cmd", "-separator", "-nullvalue", "-init", "-newline", "-c"))
	sqls := allValues(c.args, "-cmd", "-c")
	for _, o := range tail(ops) {
		if strings.HasPrefix(o.s, ".read") {
			return dbFinding(c, sqlUnknown, dbTarget{})
		}
		sqls = append(sqls, o.s)
	}
	return clientSQL(c, dbTarget{}, sqls, false)
}

// sqlFlagTool builds a handler for clients with one SQL option.
func sqlFlagTool(sqlFlags, hostFlags, fileFlags flags) handler {
	return func(c *call) finding {
		var names []string
		for n := range sqlFlags {
			names = append(names, n)
		}
		file := false
		for n := range fileFlags {
			file = file || hasFlag(c.args, n)
		}
		return clientSQL(c, target(c, hostFlags, nil), allValues(c.args, names...), file)
	}
}

func mongoTool(c *call) finding {
	ops := positionals(c.args, fset("--eval", "--host", "--port", "-u", "-p", "--username", "--password", "--authenticationDatabase", "-f", "--file"))
	t := target(c, fset("--host"), ops)
	js, ok := flagValue(c.args, "--eval")
	if !ok && c.in != nil && c.in.known {
		js, ok = c.in.text, true
	}
	switch {
	case !ok:
		return dbInteractive(c, t)
	case mongoDrop().MatchString(js):
		return dbFinding(c, sqlDestroy, t)
	case mongoWrite().MatchString(js):
		return dbFinding(c, sqlWrite, t)
	}
	return dbFinding(c, sqlRead, t)
}

var redisRead = set("get", "mget", "keys", "scan", "info", "ping", "ttl", "pttl", "type", "exists",
	"hget", "hgetall", "hkeys", "lrange", "llen", "smembers", "scard", "zrange", "zcard", "dbsize",
	"monitor", "config", "client", "memory", "strlen", "xrange", "xlen", "subscribe", "psubscribe")

func redisTool(c *call) finding {
	ops := positionals(c.args, fset("-h", "-p", "-a", "-n", "-u", "--user", "--pass", "-s", "-r", "-i", "--tls", "--cacert"))
	t := target(c, fset("-h"), nil)
	if u, ok := flagValue(c.args, "-u"); ok {
		t, _ = urlTarget(arg{s: u})
	}
	cmd := strings.ToLower(first(ops))
	switch {
	case cmd == "":
		return dbInteractive(c, t)
	case cmd == "flushall" || cmd == "flushdb":
		return dbFinding(c, sqlDestroy, t)
	case redisRead[cmd]:
		return dbFinding(c, sqlRead, t)
	}
	return dbFinding(c, sqlWrite, t)
}

func dbAdmin(what string, cats ...Category) handler {
	return func(c *call) finding {
		t := target(c, fset("-h", "--host"), nil)
		if t.remote {
			return ext(what + " on a remote server")
		}
		return irr(what, cats...)
	}
}

func pgRestore(c *call) finding {
	if hasFlag(c.args, "-c", "--clean") {
		return dbAdmin("pg_restore --clean drops objects before restoring", DestructiveDatabase)(c)
	}
	return dbAdmin("pg_restore loads a dump", SchemaMigration)(c)
}

func mysqladminTool(c *call) finding {
	if first(positionals(c.args, mysqlValued)) == "drop" {
		return dbAdmin("mysqladmin drop drops a database", DestructiveDatabase)(c)
	}
	return rev("mysqladmin")
}
