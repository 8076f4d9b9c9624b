// Package classify decides whether a shell command an agent wants to run
// may run here, should be tried in forks first, or must be denied.
//
// [Command] parses the line with a real shell parser (quoting, pipes,
// &&, ||, ;, subshells, functions, loops, heredocs, here-strings,
// redirections, command substitution) and classifies every simple command
// it contains, including those hidden behind wrappers (sudo, env, nohup,
// time, timeout, nice, xargs, npx, bunx, uvx, pnpm dlx/exec, yarn dlx,
// npm exec, uv run, poetry run, pipenv run, bundle exec, python -m,
// docker exec, find -exec, op/doppler run, FOO=1 prefixes) and inside code
// strings (sh -c, bash -lc, eval, bash <<EOF). A line is the combination of
// its parts: the widest scope and the strictest verdict win, and
// Decision.Commands names the parts that decided.
//
// # Scope
//
// read_only < reversible_local < irreversible_local < external. Text that
// is only an argument is data: echo "rm -rf /" and git commit -m "DROP
// TABLE x" are judged as echo and git commit.
//
// # Verdict
//
//   - Unbounded scope is denied in every role: rm -rf of /, a top-level or
//     system directory, ~ or a home's top level, .., $VAR/ or $(...) with
//     a value the line does not show, relative wildcards after cd to such a
//     place, writes to block devices, mkfs.
//   - External scope (category external_mutation) is denied in every role:
//     from the source it needs a person's approval (tine's approval flow),
//     and a fork never touches the outside world.
//   - Fork-worthy categories (dependency_upgrade, lockfile_rewrite,
//     schema_migration, broad_refactor, destructive_cleanup,
//     destructive_database, remote_code, secret_upload) answer fork_first from the source, with a
//     suggested pair of Approaches, and allow inside a fork, which is where
//     that work belongs.
//   - Everything else is allowed.
//
// # Decisions worth knowing
//
//   - Unknown programs are reversible_local and allowed; project scripts
//     (make X, npm run X, ./scripts/X.sh) are judged by name (deploy,
//     migrate, db:reset, format, test ...).
//   - Adding, removing or upgrading a named dependency is a
//     dependency_upgrade (it moves versions). Bare installs (npm install,
//     yarn, pnpm install, bundle install, uv sync, pip install -r) install
//     what the lockfile pins and only rewrite it to match manifest edits
//     already made: reversible_local, allowed. npm ci likewise. Explicit
//     lock regeneration (go mod tidy, poetry lock, npm install
//     --package-lock-only, cargo generate-lockfile) is a lockfile_rewrite.
//   - rm of a few named files is irreversible_local but small: allowed.
//     Recursive removal of anything but regenerable output
//     (node_modules, dist, build, target, caches ...) is destructive
//     cleanup; regenerable output is reversible_local. Truncation (> f,
//     : > f, truncate -s 0) is destructive cleanup; other redirections are
//     writes.
//   - SQL is read from -c/-e options, heredocs, here-strings and
//     echo/printf pipes: DROP, TRUNCATE, ALTER ... DROP, DELETE or UPDATE
//     without WHERE are destructive_database; CREATE/ALTER are
//     schema_migration; SQL the line does not show (-f file, < file) is
//     taken as a schema_migration. A mutating statement against a remote
//     host, a connection string held in a variable, or a production
//     environment (RAILS_ENV=production) is external.
//   - curl/wget/httpie are read-only for GET; a mutating method or a body
//     (-d, -F, --json, -T) is external unless the host is this machine or
//     a compose service (a name without dots).
//   - An interpreter (sh, bash, python, node, perl, eval, source ...) fed
//     code that the same line downloads — curl … | sh, bash <(curl …),
//     sh -c "$(wget -qO- …)" — is remote_code, fork-worthy: what it will
//     do is shown nowhere. A download piped to a script (curl … | python3
//     summarize.py) is data, not code.
//   - An HTTP client sending a credential file (.npmrc, .env, .netrc,
//     ~/.ssh/*, *.pem ...) is secret_upload: fork-worthy to this machine
//     (forks have the credentials withheld), external to any other host.
//   - git push --dry-run, npm publish --dry-run, kubectl --dry-run and
//     terraform plan are read-only.
//   - Input that cannot be parsed is denied with the parser's message:
//     the shell would likely reject it too, and nothing can be vouched for.
//
// [Prompt] reads cheap hints from the user's prompt; passed as
// Context.Prompt they only sharpen commands whose effect the line does not
// show (unknown programs, project scripts, bare installs).
package classify
