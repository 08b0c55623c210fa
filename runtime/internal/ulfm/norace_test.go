//go:build !race

package ulfm

const raceEnabled = false
