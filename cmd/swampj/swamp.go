package main

// swamp's spellings of swampj's commands.

import "github.com/urfave/cli/v2"

// doctorDatastores adds `doctor datastores`, swamp's name for the datastore
// doctor, to the doctor just registered: the same flags and the same run
// (`doctor` alone stays the same doctor).
func doctorDatastores() {
	d := commands[len(commands)-1]
	d.Subcommands = append(d.Subcommands, &cli.Command{
		Name:        "datastores",
		Usage:       "the same doctor under swamp's name ('swamp doctor datastores')",
		Description: d.Description,
		Flags:       d.Flags,
		Action:      d.Action,
	})
}
