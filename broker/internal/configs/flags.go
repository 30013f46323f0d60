package configs

import (
	"errors"
	"maps"
	"strings"

	"github.com/spf13/pflag"
)

// RegisterFlags adds one flag per broker config to fs, named as the key
// (--num.partitions=3), with the key's Doc, allowed values and default as
// usage. A value is checked when the flag is parsed, so a bad one fails
// fs.Parse with a message saying what is allowed. Boolean keys may be
// given without a value (--auto.create.topics.enable means =true).
//
// The returned function yields only the flags set on the command line,
// canonical, to overlay on the config file's settings:
//
//	flags := configs.RegisterFlags(fs)
//	_ = fs.Parse(args)
//	static, err := configs.LoadFile(path) // or an empty map
//	maps.Copy(static, flags())
//	b, err := configs.ParseBroker(static)
func RegisterFlags(fs *pflag.FlagSet) func() map[string]string {
	set := map[string]string{}
	for _, d := range brokerTable.sorted {
		usage := d.Doc
		if d.Valid != "" {
			usage += " Allowed: " + strings.TrimSuffix(d.Valid, ".") + "."
		}
		if d.Dynamic {
			usage += " Dynamic."
		}
		f := fs.VarPF(&flagValue{def: d, set: set}, d.Name, "", usage)
		f.DefValue = d.Default
		if d.Type == Boolean {
			f.NoOptDefVal = "true"
		}
	}
	return func() map[string]string { return maps.Clone(set) }
}

// flagValue is a pflag.Value for one broker key.
type flagValue struct {
	def *Def
	set map[string]string
}

func (v *flagValue) String() string {
	if s, ok := v.set[v.def.Name]; ok {
		return s
	}
	return v.def.Default
}

func (v *flagValue) Set(s string) error {
	n, reason := v.def.normalize(s)
	if reason != "" {
		return errors.New(reason)
	}
	v.set[v.def.Name] = n
	return nil
}

// Type names the value in --help, in pflag's words.
func (v *flagValue) Type() string {
	switch v.def.Type {
	case Boolean:
		return "bool"
	case Int, Short, Long:
		return "int"
	case Double:
		return "float"
	case List:
		return "list"
	}
	return "string"
}
