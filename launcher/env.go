package launcher

import "strings"

// The environment variables a manifest may not give a launched process
// unless the launcher allows them (Policy.AllowEnv): they make a program,
// its shell, interpreter or dynamic loader load and run code, or read its
// trust settings, from where the variable says. The list gathers glibc's
// variables ignored for setuid programs (UNSECURE_ENVVARS), those of
// shells, of the usual interpreters and runtimes, and the ones the
// launcher sets itself.
var deniedEnv = map[string]string{
	// Shells.
	"ENV":            "sh and ksh run the file it names at start",
	"SHELLOPTS":      "changes how bash runs scripts",
	"BASHOPTS":       "changes how bash runs scripts",
	"PS4":            "bash expands it (running commands) when tracing",
	"PROMPT_COMMAND": "bash runs it",
	"IFS":            "changes how shell scripts split words",
	"CDPATH":         "changes where shell scripts cd to",
	"ZDOTDIR":        "zsh reads its start-up files from there",
	"PATH":           "chooses which programs a process runs",
	// glibc (UNSECURE_ENVVARS) and the loader.
	"GLIBC_TUNABLES":   "glibc tunables (CVE-2023-4911)",
	"GCONV_PATH":       "glibc loads character-set modules from there",
	"GETCONF_DIR":      "glibc reads configuration from there",
	"HOSTALIASES":      "changes name resolution",
	"LOCALDOMAIN":      "changes name resolution",
	"RES_OPTIONS":      "changes name resolution",
	"RESOLV_HOST_CONF": "changes name resolution",
	"NIS_PATH":         "changes name service lookups",
	"LOCPATH":          "glibc loads locales from there",
	"NLSPATH":          "programs load message catalogues from there",
	"TMPDIR":           "moves temporary files (ignored by glibc for setuid programs)",
	"TZDIR":            "glibc reads time zone files from there",
	// Runtimes and interpreters.
	"NODE_OPTIONS":              "Node.js takes command-line options (--require) from it",
	"NODE_PATH":                 "Node.js loads modules from there",
	"NODE_REPL_EXTERNAL_MODULE": "Node.js loads it as its REPL",
	"JAVA_TOOL_OPTIONS":         "the JVM takes options (-javaagent) from it",
	"_JAVA_OPTIONS":             "the JVM takes options (-javaagent) from it",
	"JDK_JAVA_OPTIONS":          "the java launcher takes options from it",
	"JAVA_OPTS":                 "Java start scripts pass it to the JVM",
	"CLASSPATH":                 "the JVM loads classes from there",
	"PHPRC":                     "PHP reads php.ini (auto_prepend_file) from there",
	"PHP_INI_SCAN_DIR":          "PHP reads more .ini files from there",
	"TCLLIBPATH":                "Tcl loads packages from there",
	"R_PROFILE":                 "R runs it at start",
	"R_PROFILE_USER":            "R runs it at start",
	"R_ENVIRON":                 "R reads it at start",
	"R_ENVIRON_USER":            "R reads it at start",
	"DOTNET_STARTUP_HOOKS":      ".NET runs its assemblies at start",
	"DOTNET_ADDITIONAL_DEPS":    ".NET loads dependencies from there",
	"GODEBUG":                   "changes the Go runtime's behaviour, TLS and X.509 checks included",
	"GOFLAGS":                   "changes what the go command builds and runs",
	"SSL_CERT_FILE":             "replaces the CAs TLS clients trust",
	"SSL_CERT_DIR":              "replaces the CAs TLS clients trust",
	// Set by the launcher itself.
	"SLUICE_CONSUL":    "set by the launcher",
	"SLUICE_CLUSTER":   "set by the launcher",
	"SLUICE_HOST":      "set by the launcher",
	"SLUICE_NODE_ID":   "set by the launcher",
	"SLUICE_DATA_DIR":  "set by the launcher (the operator's own directory)",
	"SLUICE_HTTP":      "set by the launcher",
	"SLUICE_BIND":      "set by the launcher",
	"SLUICE_ADVERTISE": "set by the launcher",
	"SLUICE_NODE_CA":   "set by the launcher (the node's transport TLS)",
	"SLUICE_NODE_CERT": "set by the launcher (the node's transport TLS)",
	"SLUICE_NODE_KEY":  "set by the launcher (the node's transport TLS)",
}

// deniedPrefixes are families of variables refused by name prefix.
var deniedPrefixes = []struct{ prefix, why string }{
	{"LD_", "the dynamic loader loads libraries it names (LD_PRELOAD, LD_LIBRARY_PATH, LD_AUDIT)"},
	{"DYLD_", "the macOS dynamic loader loads libraries it names"},
	{"MALLOC_", "glibc's allocator reads it"},
	{"BASH_", "bash runs files and functions it names (BASH_ENV, BASH_FUNC_*)"},
	{"PERL", "Perl runs code and loads modules it names (PERL5OPT, PERL5LIB, PERL5DB)"},
	{"PYTHON", "Python runs code and loads modules it names (PYTHONPATH, PYTHONSTARTUP, PYTHONWARNINGS, PYTHONHOME)"},
	{"RUBY", "Ruby runs code and loads libraries it names (RUBYOPT, RUBYLIB)"},
	{"GEM_", "RubyGems loads gems from there"},
	{"BUNDLE_", "Bundler loads gems from there"},
	{"LUA_", "Lua runs code it names (LUA_INIT, LUA_PATH)"},
	{"ERL_", "the Erlang VM takes options from it"},
	{"GIT_", "git runs programs it names (GIT_SSH_COMMAND, GIT_EXEC_PATH)"},
	{"OPENSSL_", "OpenSSL reads configuration and loads engines it names"},
	{"CORECLR_", ".NET loads the profiler it names"},
	{"COR_", ".NET Framework loads the profiler it names"},
	{"SLUICE_CONTROL_", "the launched process's control API security is set by the launcher"},
	{"SLUICE_LAUNCH", "a launched process runs no launcher of its own"},
}

// DeniedEnv reports whether a manifest may not set the variable name
// (compared in any case), and why.
func DeniedEnv(name string) (why string, denied bool) {
	up := strings.ToUpper(name)
	if why, ok := deniedEnv[up]; ok {
		return why, true
	}
	for _, d := range deniedPrefixes {
		if strings.HasPrefix(up, d.prefix) {
			return d.why, true
		}
	}
	return "", false
}
