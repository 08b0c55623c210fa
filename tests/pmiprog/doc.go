// Command pmiprog is a tiny rank program for golaunch's real-process tests. It talks to
// its agent through package pmi directly (not through runtime), so the launcher can be
// tested on its own. The first argument picks a behaviour; see main.go.
package main
