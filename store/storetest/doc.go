// Package storetest is the conformance suite of tine.Store: every store
// (sqlite, postgres) runs it from its own tests, so that they keep one
// contract: the records, their errors, their order, and the transactions'
// semantics tine relies on.
package storetest
