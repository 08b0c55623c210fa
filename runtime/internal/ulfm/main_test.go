package ulfm

import "flag"

var soak = flag.Bool("ulfm.soak", false, "run the simulations with many more seeds and a deeper model check")
