package classify

import "strings"

// Kinds of migration subcommands.
const (
	migRead    = iota + 1 // status, history
	migGen                // writes a migration file
	migApply              // changes the schema
	migDestroy            // drops the database or every object
	migData               // seeds rows
)

// migKinds maps each migration tool's subcommands to their kind.
var migKinds = map[string]map[string]int{
	"alembic": {"upgrade": migApply, "downgrade": migApply, "stamp": migApply, "revision": migGen, "merge": migGen,
		"current": migRead, "history": migRead, "heads": migRead, "branches": migRead, "show": migRead, "check": migRead},
	"goose": {"up": migApply, "up-by-one": migApply, "up-to": migApply, "down": migApply, "down-to": migApply,
		"redo": migApply, "reset": migDestroy, "create": migGen, "fix": migGen, "status": migRead, "version": migRead, "validate": migRead},
	"flyway": {"migrate": migApply, "undo": migApply, "baseline": migApply, "repair": migApply, "clean": migDestroy,
		"info": migRead, "validate": migRead, "check": migRead},
	"liquibase": {"update": migApply, "update-count": migApply, "rollback": migApply, "rollback-count": migApply,
		"rollbackCount": migApply, "drop-all": migDestroy, "dropAll": migDestroy, "status": migRead, "history": migRead,
		"diff": migRead, "validate": migRead, "update-sql": migRead, "updateSQL": migRead},
	"knex": {"migrate:latest": migApply, "migrate:up": migApply, "migrate:down": migApply, "migrate:rollback": migApply,
		"migrate:make": migGen, "migrate:status": migRead, "migrate:list": migRead, "seed:run": migData, "seed:make": migGen},
	"sequelize": {"db:migrate": migApply, "db:migrate:undo": migApply, "db:migrate:undo:all": migApply,
		"migration:generate": migGen, "migration:create": migGen, "model:generate": migGen, "db:drop": migDestroy,
		"db:seed:all": migData, "db:seed": migData, "db:migrate:status": migRead, "db:create": migGen},
	"typeorm": {"migration:run": migApply, "migration:revert": migApply, "migration:generate": migGen,
		"migration:create": migGen, "schema:sync": migApply, "schema:drop": migDestroy, "migration:show": migRead, "schema:log": migRead},
	"drizzle-kit": {"generate": migGen, "migrate": migApply, "push": migApply, "drop": migGen, "check": migRead,
		"introspect": migGen, "pull": migGen, "studio": migRead, "up": migGen},
	"migrate": {"up": migApply, "down": migApply, "goto": migApply, "force": migApply, "drop": migDestroy,
		"create": migGen, "version": migRead},
	"dbmate": {"up": migApply, "migrate": migApply, "rollback": migApply, "down": migApply, "drop": migDestroy,
		"new": migGen, "n": migGen, "create": migGen, "status": migRead, "dump": migRead, "wait": migRead, "load": migApply},
	"atlas": {"apply": migApply, "clean": migDestroy, "inspect": migRead, "lint": migRead, "status": migRead,
		"diff": migGen, "new": migGen, "hash": migGen},
	"hasura": {"apply": migApply, "delete": migApply, "squash": migGen, "create": migGen, "status": migRead},
	"prisma": {"dev": migApply, "deploy": migApply, "resolve": migApply, "reset": migDestroy, "diff": migRead,
		"status": migRead, "push": migApply, "pull": migGen, "seed": migData, "execute": migApply, "validate": migRead},
	"sqlx": {"run": migApply, "revert": migApply, "add": migGen, "drop": migDestroy, "reset": migDestroy,
		"create": migGen, "setup": migApply, "info": migRead, "prepare": migRead},
	"diesel": {"run": migApply, "revert": migApply, "redo": migApply, "generate": migGen, "reset": migDestroy,
		"drop": migDestroy, "setup": migApply, "list": migRead, "pending": migRead, "print-schema": migRead},
}

var migValued = fset("-c", "--config", "-x", "-n", "--name", "--schema", "-dir", "-path", "-source",
	"-database", "--database-url", "--url", "-url", "--env", "-e", "--migrations-dir", "-d", "--dir",
	"--knexfile", "--config-path", "--data-source", "-s", "--source", "--connection", "--endpoint",
	"--table", "--migrations-table", "--database")

func migrateTools() {
	for name := range migKinds {
		tools[name] = migTool
	}
	tools["sequelize-cli"] = func(c *call) finding { n := *c; n.name = "sequelize"; return migTool(&n) }
	tools["typeorm-ts-node-commonjs"] = func(c *call) finding { n := *c; n.name = "typeorm"; return migTool(&n) }
	register(map[string]handler{
		"rails":    railsTool,
		"rake":     railsTool,
		"supabase": supabaseTool,
		"artisan":  artisanTool,
		"manage.py": func(c *call) finding {
			return djangoTool(c, positionals(c.args, fset("--settings", "--database", "-v", "--verbosity")))
		},
	})
}

// migTool finds the first known subcommand among the operands.
func migTool(c *call) finding {
	kinds := migKinds[c.name]
	ops := positionals(c.args, migValued)
	for _, o := range ops {
		if k, ok := kinds[o.s]; ok {
			what := c.name + " " + strings.Join(strs(ops), " ")
			if c.name == "prisma" && k == migApply && hasFlag(c.args, "--force-reset", "--accept-data-loss") {
				k = migDestroy
			}
			return migFinding(c, what, k)
		}
	}
	return rev(c.name + " " + first(ops))
}

func migFinding(c *call, what string, kind int) finding {
	switch kind {
	case migRead:
		return ro(what + " only reads")
	case migGen:
		return migrationFinding(c, what, true)
	case migDestroy:
		return destroyFinding(c, what)
	case migData:
		if remoteMig(c) {
			return ext(what + " writes rows to a remote or production database")
		}
		return irr(what + " writes rows")
	}
	return migrationFinding(c, what, false)
}

// remoteMig reports whether a migration tool targets production or a
// remote database URL.
func remoteMig(c *call) bool {
	if prodEnv(c) {
		return true
	}
	for _, name := range []string{"--url", "-url", "--database-url", "-database", "--db-url", "--connection"} {
		if v, ok := flagValue(c.args, name); ok {
			if t, ok := urlTarget(arg{s: v}); ok && t.remote {
				return true
			}
		}
	}
	t := target(c, nil, positionals(c.args, migValued))
	return t.remote
}

// migrationFinding: writing a migration file is reversible; applying one
// changes the database.
func migrationFinding(c *call, what string, generateOnly bool) finding {
	switch {
	case generateOnly:
		return rev(what+" writes a migration", SchemaMigration)
	case remoteMig(c):
		f := ext(what + " migrates a remote or production database")
		f.cats = append(f.cats, SchemaMigration)
		return f
	}
	return irr(what+" migrates the database schema", SchemaMigration)
}

func destroyFinding(c *call, what string) finding {
	if remoteMig(c) {
		f := ext(what + " wipes a remote or production database")
		f.cats = append(f.cats, DestructiveDatabase)
		return f
	}
	return irr(what+" drops or resets the database", DestructiveDatabase)
}

var railsTasks = map[string]int{
	"db:migrate": migApply, "db:rollback": migApply, "db:migrate:redo": migApply, "db:migrate:up": migApply,
	"db:migrate:down": migApply, "db:setup": migApply, "db:prepare": migApply, "db:schema:load": migDestroy,
	"db:structure:load": migDestroy, "db:drop": migDestroy, "db:reset": migDestroy, "db:purge": migDestroy,
	"db:truncate_all": migDestroy, "db:seed": migData, "db:migrate:status": migRead, "db:version": migRead,
	"db:create": migGen, "db:schema:dump": migRead,
}

// railsTool: "rails db:migrate", "rails g migration", "rake db:drop".
func railsTool(c *call) finding {
	ops := positionals(c.args, fset("-e", "--environment"))
	sub := first(ops)
	if k, ok := railsTasks[sub]; ok {
		return migFinding(c, c.name+" "+sub, k)
	}
	if (sub == "generate" || sub == "g") && len(ops) > 1 {
		switch ops[1].s {
		case "migration", "model", "scaffold", "resource":
			return migrationFinding(c, c.name+" generate "+ops[1].s, true)
		}
	}
	switch sub {
	case "test", "spec", "routes", "about", "stats", "notes", "-T", "":
		return ro(c.name + " " + sub + " only reads")
	}
	return script(sub)
}

var djangoKinds = map[string]int{
	"migrate": migApply, "makemigrations": migGen, "squashmigrations": migGen, "flush": migDestroy,
	"reset_db": migDestroy, "sqlflush": migRead, "sqlmigrate": migRead, "showmigrations": migRead,
	"check": migRead, "test": migRead, "diffsettings": migRead, "loaddata": migData,
	"inspectdb": migRead, "sqlsequencereset": migRead,
}

// djangoTool: "python manage.py migrate" and friends.
func djangoTool(c *call, ops []arg) finding {
	sub := first(ops)
	if k, ok := djangoKinds[sub]; ok {
		return migFinding(c, "manage.py "+sub, k)
	}
	if sub == "dbshell" {
		return clientSQL(c, dbTarget{}, nil, false)
	}
	return rev("manage.py " + sub)
}

var laravelKinds = map[string]int{
	"migrate": migApply, "migrate:rollback": migApply, "migrate:install": migApply, "make:migration": migGen,
	"migrate:fresh": migDestroy, "migrate:reset": migDestroy, "migrate:refresh": migDestroy, "db:wipe": migDestroy,
	"migrate:status": migRead, "db:seed": migData, "schema:dump": migRead,
}

// artisanTool: "php artisan migrate:fresh".
func artisanTool(c *call) finding {
	ops := positionals(c.args, fset("--env", "--database", "--path"))
	sub := first(ops)
	if k, ok := laravelKinds[sub]; ok {
		return migFinding(c, "artisan "+sub, k)
	}
	if sub == "test" || sub == "route:list" || sub == "list" {
		return ro("artisan " + sub + " only reads")
	}
	return rev("artisan " + sub)
}

// migrationTask handles Elixir's "mix ecto.*" tasks.
func migrationTask(c *call, task string) finding {
	kinds := map[string]int{"ecto.migrate": migApply, "ecto.rollback": migApply, "ecto.gen.migration": migGen,
		"ecto.setup": migApply, "ecto.drop": migDestroy, "ecto.reset": migDestroy, "ecto.migrations": migRead,
		"ecto.create": migGen, "ecto.load": migApply, "ecto.dump": migRead}
	if k, ok := kinds[task]; ok {
		return migFinding(c, "mix "+task, k)
	}
	return rev("mix " + task)
}

func supabaseTool(c *call) finding {
	ops := positionals(c.args, fset("--project-ref", "--db-url", "-p", "--password", "--workdir"))
	words := strings.Join(strs(ops[:min(len(ops), 2)]), " ")
	linked := hasFlag(c.args, "--linked", "--db-url")
	switch words {
	case "db push":
		return ext("supabase db push migrates the linked (remote) project")
	case "db reset":
		if linked {
			return ext("supabase db reset --linked wipes the remote database")
		}
		return irr("supabase db reset recreates the local database", DestructiveDatabase)
	case "migration new", "db diff":
		return migrationFinding(c, "supabase "+words, true)
	case "migration up":
		if linked {
			return ext("supabase migration up migrates the remote database")
		}
		return migrationFinding(c, "supabase migration up", false)
	}
	switch first(ops) {
	case "functions", "secrets", "projects", "orgs", "domains", "storage", "sso", "branches", "postgres-config", "network-restrictions":
		if len(ops) > 1 && ops[1].s != "list" && ops[1].s != "download" && ops[1].s != "get" && ops[1].s != "serve" {
			return ext("supabase " + words + " changes the hosted project")
		}
		return ro("supabase " + words + " only reads")
	}
	return rev("supabase " + words)
}

// pythonTool runs "python -m MOD", "python manage.py CMD" or a script.
func pythonTool(c *call) finding {
	if mod, ok := flagValue(c.args, "-m"); ok {
		i := indexOf(c.args, "-m")
		if i+1 < len(c.args) && c.args[i+1].s == mod {
			i++
		}
		c.sub(append([]arg{{s: mod}}, c.args[i+1:]...))
		return ro("python -m runs a module")
	}
	if hasFlag(c.args, "-c") {
		return rev("python runs inline code")
	}
	ops := positionals(c.args, fset("-W", "-X"))
	if len(ops) == 0 {
		return rev("interactive python")
	}
	if strings.HasSuffix(ops[0].s, "manage.py") {
		return djangoTool(c, ops[1:])
	}
	return script(ops[0].s)
}

// phpTool: "php artisan ..." or a script.
func phpTool(c *call) finding {
	ops := positionals(c.args, fset("-d", "-c"))
	if len(ops) > 0 && strings.HasSuffix(ops[0].s, "artisan") {
		n := *c
		n.args = c.args[indexOf(c.args, ops[0].s)+1:]
		return artisanTool(&n)
	}
	if len(ops) == 0 {
		return rev("interactive php")
	}
	return script(ops[0].s)
}
