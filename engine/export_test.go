package engine

// LastSealedBy is lastSealedBy, for the tests of package engine_test.
var LastSealedBy = lastSealedBy
