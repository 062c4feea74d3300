# The leader's key arena (src/state/arena.c): from the second large parallel plain
# aggregate of a backend on, workers and the leader write their keys into
# one shared memory segment the leader creates for the transaction, sized to
# what the last one needed, and partial states travel as references into
# it.  Answers equal the built-ins on the first (no arena) and later (arena)
# queries, with and without leader participation, within and across
# transactions, when the arena is too small for everything, after an ERROR
# in the leader; grouped plans pass their states in slices of it.  No arena
# is held between transactions (issue 29; 012_shared_memory_cap.pl).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use GsTest;
use Test::More;

# create_parallel_table (GsTest.pm): each partial state passes
# GS_ARENA_START_BYTES (256 kB) and takes 4 MB arena chunks
create_parallel_table('gs_ar');

# the CPU path: this cluster has no GPU service (with one, partial states
# lease key-pool chunks and the arena takes only the rest: 106_service_leases.pl)
my $par = force_parallel_executor(2) . "SET gpuselect.device = 'cpu'; SET gpuselect.gpu_min_rows = 0;\n"
  . "SET statement_timeout = '120s';\n";
my $status = q{SELECT 'st:' || string_agg(name || '=' || coalesce(value, ''), ',' ORDER BY name) FROM gpuselect_status()
  WHERE name IN ('states_in_arena', 'states_shared', 'parallel_arena_bytes', 'parallel_arena_used_bytes',
                 'parallel_arena_last_bytes', 'parallel_arena_last_used_bytes');};

# ($statuses, $other_lines) of one psql run's output
sub split_out
{
	my ($out) = @_;
	my @st;
	for my $l (split /\n/, $out)
	{
		next unless $l =~ /^st:(.*)$/;
		push @st, { map { split /=/, $_, 2 } split /,/, $1 };
	}
	my @rest = grep { !/^st:/ } split /\n/, $out;
	return (\@st, \@rest);
}

my $fr = q{ARRAY[0, 0.001, 0.1, 0.25, 0.5, 0.75, 0.9, 0.999, 1]::float8[]};
my ($gpu, $builtin) = parallel_table_queries('gs_ar');
$gpu .= ";\n";
my $want = psql_value("SET max_parallel_workers_per_gather = 0; $builtin;");

# one session: the first query creates no arena, the second one does
my ($st, $rest) = split_out(psql_value($par . "SET gpuselect.parallel_arena_size = '64MB';\n"
	  . $status . $gpu . $status . $gpu . $status . $gpu . $status));
is_deeply($rest, [ $want, $want, $want ], 'three parallel queries: equal to the built-ins');
is($st->[1]{parallel_arena_last_bytes}, 0, 'first query: no arena yet');
cmp_ok($st->[1]{states_shared} - $st->[0]{states_shared}, '>=', 3, 'first query: worker states through segments');
# 12 states (x twice, i4, i2 from 3 participants) of one 4 MB chunk each
my $arena = $st->[2]{parallel_arena_last_bytes};
ok($arena >= 8 << 20 && $arena <= 64 << 20,
	"second query: an arena sized to the first one's states ($arena bytes), within parallel_arena_size");
is($st->[2]{parallel_arena_bytes}, 0, 'and given back at the end of its transaction');
# x twice, i4 and i2 from each of 3 participants, if every one got rows
cmp_ok($st->[2]{states_in_arena} - $st->[1]{states_in_arena}, '>=', 8, 'second query: states in the arena');
is($st->[2]{states_shared} - $st->[1]{states_shared}, 0, 'second query: no segment per worker state');
cmp_ok($st->[3]{states_in_arena} - $st->[2]{states_in_arena}, '>=', 8, 'third query: the arena again');
is($st->[3]{parallel_arena_bytes}, 0, 'no arena between transactions');

# within one transaction the arena is reclaimed only at its end
($st, $rest) = split_out(psql_value($par . "SET gpuselect.parallel_arena_size = '64MB';\n"
	  . $gpu . $gpu . "BEGIN;\n" . $gpu . $status . $gpu . $status . "COMMIT;\n" . $status));
is_deeply($rest, [ ($want) x 4 ], 'two queries in one transaction: equal to the built-ins');
# one arena per transaction, sized for one query: the second takes what is left
cmp_ok($st->[0]{parallel_arena_used_bytes}, '>', 0, 'a transaction holds its arena');
cmp_ok($st->[1]{parallel_arena_used_bytes}, '>=', $st->[0]{parallel_arena_used_bytes},
	'the second query of a transaction shares it');
is($st->[2]{parallel_arena_bytes}, 0, 'given back at commit');

# without leader participation; and an arena too small for everything
($st, $rest) = split_out(psql_value($par . "SET gpuselect.parallel_arena_size = '8MB';\n"
	  . $gpu . $status . $gpu . "SET parallel_leader_participation = off;\n" . $gpu . $status));
is_deeply($rest, [ ($want) x 3 ], 'an 8 MB arena (full after two chunks), with and without the leader: equal');
cmp_ok($st->[1]{states_in_arena} - $st->[0]{states_in_arena}, '>=', 2, 'some states still in the arena');

# gpuselect.parallel_arena_size = 0: no arena at all
($st, $rest) = split_out(psql_value($par . "SET gpuselect.parallel_arena_size = 0;\n"
	  . $gpu . $gpu . $status));
is_deeply($rest, [ ($want) x 2 ], 'parallel_arena_size = 0: equal to the built-ins');
is($st->[0]{parallel_arena_last_bytes}, 0, 'parallel_arena_size = 0: no arena');

# grouped plans: a participant's state of a group (600-900 kB here) is copied
# into a slice of the arena when it is serialized (arena.h)
my $grouped = "SELECT grp, gpu_quantiles(x, $fr) FROM gs_ar GROUP BY grp ORDER BY grp";
my $grouped_bi = "SELECT grp, percentile_disc($fr) WITHIN GROUP (ORDER BY x) FROM gs_ar GROUP BY grp ORDER BY grp";
my $want_grouped = psql_value("SET max_parallel_workers_per_gather = 0; $grouped_bi;");
($st, $rest) = split_out(psql_value($par . "SET gpuselect.parallel_arena_size = '64MB';\n"
	  . $gpu . $gpu . $status . "$grouped;\n" . $status));
is(join("\n", @{$rest}[2 .. $#$rest]), $want_grouped, 'GROUP BY with an arena: equal to the built-ins');
# 4 groups from each of 2 workers, if both got rows
cmp_ok($st->[1]{states_in_arena} - $st->[0]{states_in_arena}, '>=', 4, 'GROUP BY: states in arena slices');

# a session of GROUP BY queries only: the first one passes its states the
# slow way and asks for an arena, the next ones use slices; a one-chunk
# arena (4 MB) holds some of a query's states and the rest travel inline
($st, $rest) = split_out(psql_value($par . "SET gpuselect.parallel_arena_size = '64MB';\n"
	  . $status . "$grouped;\n" . $status . "$grouped;\n" . $status));
is_deeply([ join("\n", @{$rest}[0 .. 3]), join("\n", @{$rest}[4 .. 7]) ], [ $want_grouped, $want_grouped ],
	'GROUP BY only, twice: equal to the built-ins');
is($st->[1]{parallel_arena_last_bytes}, 0, 'first GROUP BY query: no arena yet');
is($st->[1]{states_in_arena} - $st->[0]{states_in_arena}, 0, 'first GROUP BY query: no slices');
cmp_ok($st->[2]{states_in_arena} - $st->[1]{states_in_arena}, '>=', 4, 'second GROUP BY query: slices');
($st, $rest) = split_out(psql_value($par . "SET gpuselect.parallel_arena_size = '4MB';\n"
	  . "SET parallel_leader_participation = off;\n"
	  . "$grouped;\n$grouped;\n" . $status . "$grouped;\n" . $status));
is_deeply([ join("\n", @{$rest}[4 .. 7]), join("\n", @{$rest}[8 .. 11]) ], [ $want_grouped, $want_grouped ],
	'GROUP BY with a full one-chunk arena: equal to the built-ins');
my $in = $st->[1]{states_in_arena} - $st->[0]{states_in_arena};
# 8 states of ~900 kB from two workers: at most 4 fit one chunk's slices
ok($in >= 1 && $in < 8, "a full arena: $in of 8 states in slices, the others inline");
($st, $rest) = split_out(psql_value($par . "SET gpuselect.parallel_arena_size = '64MB';\n"
	  . "SET gpuselect.shared_partial_states = off;\n"
	  . "$grouped;\n$grouped;\n" . $status . "$grouped;\n" . $status));
is(join("\n", @{$rest}[8 .. 11]), $want_grouped, 'GROUP BY, shared_partial_states = off: equal');
is($st->[1]{states_in_arena} - $st->[0]{states_in_arena}, 0, 'shared_partial_states = off: no slices');

# a hashed finalize step holds references, not copies: it stays within a
# small work_mem where copies of the keys (the tuple queue) make it spill
# (200 groups of a column with statistics: a partial hash aggregate whose
# finalize step meets its groups early and its keys late)
psql_value('CREATE TABLE gs_ar_g AS SELECT x, i4 % 200 AS g FROM gs_ar; ANALYZE gs_ar_g;');
my $hashed = "SET enable_sort = off; SET work_mem = '1MB';\n"
  . "EXPLAIN (ANALYZE, TIMING OFF, COSTS OFF) SELECT g, gpu_quantiles(x, $fr) FROM gs_ar_g GROUP BY g;\n";
sub finalize_batches
{
	my ($out) = @_;
	my @b = $out =~ /Finalize HashAggregate.*?\n\s+Batches: (\d+)/sg;
	return join(',', @b);
}
my $b_slices = finalize_batches(psql_value($par . "SET gpuselect.parallel_arena_size = '64MB';\n" . $hashed x 2));
my $b_queue = finalize_batches(psql_value($par . "SET gpuselect.shared_partial_states = off;\n" . $hashed x 2));
like($b_slices, qr/^\d+,1$/, "hashed finalize with slices: one batch (batches: $b_slices)");
like($b_queue, qr/^(\d+),(\d+)$/, 'hashed finalize through the tuple queue: planned as expected');
# (without an arena either run is one to judge by: the second alone has
# come out at one batch when the workers' rows arrived early, 13,1)
my ($q1, $q2) = split /,/, $b_queue;
cmp_ok($q1 > $q2 ? $q1 : $q2, '>', 1, "hashed finalize through the tuple queue: spills (batches: $b_queue)");

# an ERROR in the leader after it attached a worker's state (test hook) and
# a cancelled query: the next query in the session is right, the arena
# empty again, and no segment is left behind
my $dsm_type = psql_value('SHOW dynamic_shared_memory_type;');
sub shm_segments
{
	my $n = 0;
	return -1 unless $dsm_type eq 'posix' && opendir(my $d, '/dev/shm');
	$n += (/^PostgreSQL\.\d+$/ ? 1 : 0) for readdir $d;
	closedir $d;
	return $n;
}
# a session's arena goes when its backend exits, which may be just after psql
# has: wait for the count to settle, before and after
sub settled_segments
{
	my ($target) = @_;
	my $n = shm_segments();
	for (my $i = 0; $i < 100 && $n > ($target // -1); $i++)
	{
		select(undef, undef, undef, 0.1);
		my $m = shm_segments();
		last if !defined($target) && $m == $n;
		$n = $m;
	}
	return $n;
}
my $before = settled_segments();
# an 8 MB arena: some states in it, the others through segments, so the hook
# fires.  Without the leader: the workers then hold every key (12.6 MB and
# more, beyond the arena) whatever their share; with the leader a slow worker
# start on a busy machine let the leader take enough rows for the workers'
# states to fit the arena, and a query without a segment did not fail.
my ($rc, $out) = psql($par . "SET gpuselect.parallel_arena_size = '8MB';\n"
	  . "SET parallel_leader_participation = off;\n" . $gpu
	  . "SET gpuselect.test_fail_shared_attach = on;\n" . $gpu x 3
	  . "RESET gpuselect.test_fail_shared_attach;\n"
	  . "SET statement_timeout = '20ms';\n" . $gpu . "SET statement_timeout = '120s';\n"
	  . $gpu . $status, on_error_stop => 0);
my @errs = $out =~ /ERROR:\s+XX000:\s+gpuselect: test hook/mg;
is(scalar(@errs), 3, 'the hook failed the queries that used the arena and a segment') or diag(substr($out, 0, 3000));
($st, $rest) = split_out($out);
my @answers = grep { /\|/ } @$rest;
is($answers[-1], $want, 'after ERRORs and a cancel: equal to the built-ins');
is($st->[-1]{parallel_arena_bytes}, 0, 'no arena held after the transaction');
SKIP:
{
	skip "dynamic_shared_memory_type is $dsm_type, not posix", 1 unless $dsm_type eq 'posix';
	# the session above has ended: any segment is gone
	cmp_ok(settled_segments($before), '<=', $before, 'no shared memory segments left behind');
}

psql_value('DROP TABLE gs_ar, gs_ar_g;');
done_testing();
