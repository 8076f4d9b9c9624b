// Package sqltx implements tine.Tx once for tine's SQL stores (package
// sqlite and package postgres): the records' columns, the queries, their
// scanning and the translation of constraint errors, over a small DB
// interface each store adapts its driver's transaction to and a Dialect
// naming what differs between the databases.
package sqltx
