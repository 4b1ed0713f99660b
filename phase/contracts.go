package phase

import (
	"fmt"
	"strings"

	"rsag/config"
	"rsag/phases"
	"rsag/report"
)

// The contracts: the seed's, and the hierarchy's when it is on. A contract
// that failed on any rank fails the run, alike on every rank.
func init() {
	Register(Phase{Name: report.Contracts, Order: 10,
		Enabled: func(cfg config.Config) bool { return cfg.Contracts.Enabled },
		Prepare: prepareContracts})
}

func prepareContracts(j Job) (Prepared, error) {
	var hosts []string
	if j.Groups != nil {
		var err error
		if hosts, err = j.Hosts(); err != nil {
			return Prepared{}, err
		}
	}
	return Prepared{Run: func(env Env, rows *report.Rows) error {
		results, err := phases.RunContracts(env.Backend)
		if err != nil {
			return fmt.Errorf("contracts on rank %d: %w", env.Rank, err)
		}
		if j.Groups != nil {
			more, err := phases.RunHierarchyContracts(env.Backend, j.Groups, hosts)
			results = append(results, more...)
			if err != nil {
				rows.Contracts = append(rows.Contracts, ContractRows(env.Rank, env.Host, results)...)
				return fmt.Errorf("hierarchical contracts on rank %d: %w", env.Rank, err)
			}
		}
		rows.Contracts = append(rows.Contracts, ContractRows(env.Rank, env.Host, results)...)
		var failed []string
		for _, r := range results {
			if !r.Correct {
				failed = append(failed, r.Name)
			}
		}
		ok, bad, err := env.Comm.AllTrue(len(failed) == 0)
		if err != nil {
			return err
		}
		if !ok {
			return &Agreed{fmt.Errorf("contracts failed on rank(s) %v (rank 0: %s)", bad, orNone(failed))}
		}
		env.Progress(fmt.Sprintf("contracts: %d held on every rank", len(results)))
		return nil
	}}, nil
}

// ContractRows are one rank's contract results as rows.
func ContractRows(rank int, host string, results []phases.ContractResult) []report.ContractRow {
	var rows []report.ContractRow
	for _, x := range results {
		rows = append(rows, report.ContractRow{Rank: rank, Name: x.Name, Correct: x.Correct, Detail: x.Detail, Host: host})
	}
	return rows
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
