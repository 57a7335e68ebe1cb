// Package archtest keeps the package map of docs/ARCHITECTURE.md section 9
// true. Its test reads the imports of every package of the module and the
// map's table, and fails when the two disagree in either direction: a file
// that imports what its package's row does not allow, or a row that lists an
// import nothing makes. The layering the map describes (lower packages never
// import higher ones, the test kit stays out of production code) then holds
// in the code, and the map stays something a newcomer can trust.
//
// The test is the package's point; nothing imports it. When the table is
// wrong, `go test ./internal/archtest -run TestPackageMapIsTrue -v -args
// -print-map` prints it as the code has it, ready to paste.
package archtest
