package confine

// Interpreters returns the interpreter a script's "#!" line names, and,
// when that is env, the program env would run, looked up in path: what a
// start grants beside the executable (Build), for a check made before
// one (a command needing more than these is refused at connection add).
func Interpreters(exe, path string) []string { return interpreters(exe, path) }
