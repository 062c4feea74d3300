# Large partial states of parallel plain aggregates travel from the workers
# to the leader in dynamic shared memory (src/state/shared_state.c,
# GS_SHARED_STATE_MIN_BYTES = 1 MB): answers equal the built-ins with it on
# and off; grouped plans (a LIMIT may stop the leader reading) keep the tuple
# queue and do not hang; an ERROR in the leader after it attached a state
# (test hook) neither hangs the workers nor leaves segments or memory behind.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use GsTest;
use Test::More;

# create_parallel_table (GsTest.pm): ~2.4 MB of float8 keys per partial
# state (shared), ~1.2 MB of int4 (shared), ~0.6 MB of int2 (queue)
create_parallel_table('gs_sh');

# The CPU path (this cluster has no GPU service; with one, partial states
# lease key-pool chunks instead: 106_service_leases.pl).  A hang would be a
# bug: statement_timeout makes it an ERROR instead of a stuck test.
# The leader's key arena (007_arena.pl) would take these states from the
# second query of a session on: off here, so the segments are what is tested.
my $par = force_parallel_executor(2) . "SET gpuselect.device = 'cpu'; SET gpuselect.gpu_min_rows = 0;\n"
  . "SET statement_timeout = '120s'; SET gpuselect.parallel_arena_size = 0;\n";
my $shared = q{SELECT 'shared:' || value FROM gpuselect_status() WHERE name = 'states_shared';};
sub split_out
{
	my ($out) = @_;
	my @s = $out =~ /^shared:(\d+)$/mg;
	my @rest = grep { !/^shared:/ } split /\n/, $out;
	return (\@s, \@rest);
}

my $fr = q{ARRAY[0, 0.001, 0.1, 0.25, 0.5, 0.75, 0.9, 0.999, 1]::float8[]};
my ($gpu, $builtin) = parallel_table_queries('gs_sh');
my $want_plain = psql_value("SET max_parallel_workers_per_gather = 0; $builtin;");
my $want = $want_plain;

like(psql_value($par . "EXPLAIN (COSTS OFF) $gpu;"), qr/Partial Aggregate/, 'plan uses partial aggregation');

my ($s, $rest) = split_out(psql_value($par . $shared . "$gpu;" . $shared));
is($rest->[0], $want, 'shared partial states: equal to the built-ins');
# 3 large states (x twice, i4) from each of 2 workers, if both got rows
cmp_ok($s->[1] - $s->[0], '>=', 3, 'large worker states went through shared memory');

($s, $rest) = split_out(psql_value($par . "SET parallel_leader_participation = off;" . $shared . "$gpu;" . $shared));
is($rest->[0], $want, 'same without leader participation');
cmp_ok($s->[1] - $s->[0], '>=', 3, 'only the workers\' states, through shared memory');

($s, $rest) = split_out(psql_value($par . "SET gpuselect.shared_partial_states = off;" . $shared . "$gpu;" . $shared));
is($rest->[0], $want, 'gpuselect.shared_partial_states = off: equal to the built-ins');
is($s->[1] - $s->[0], 0, 'off: every state went through the tuple queue');

# grouped: the queue, and a LIMIT that stops reading early does not hang
my $grouped = "SELECT grp, gpu_quantiles(x, $fr) FROM gs_sh GROUP BY grp ORDER BY grp";
my $grouped_bi = "SELECT grp, percentile_disc($fr) WITHIN GROUP (ORDER BY x) FROM gs_sh GROUP BY grp ORDER BY grp";
$want = psql_value("SET max_parallel_workers_per_gather = 0; $grouped_bi;");
for my $v ([ 'sorted', 'SET enable_hashagg = off;', qr/GroupAggregate/ ],
	[ 'hashed', 'SET enable_sort = off;', qr/HashAggregate/ ])
{
	my ($name, $set, $node) = @$v;
	# the plan is the variant's: partial aggregation in workers, by its method
	my $plan = psql_value($par . $set . "EXPLAIN (COSTS OFF) $grouped;");
	like($plan, qr/Partial $node/, "GROUP BY ($name): workers aggregate partially by $name groups");
	($s, $rest) = split_out(psql_value($par . $set . $shared . "$grouped;" . $shared));
	is(join("\n", @$rest), $want, "GROUP BY ($name): equal to the built-ins");
	is($s->[1] - $s->[0], 0, "GROUP BY ($name): states went through the tuple queue");
}
my $first = (split /\n/, $want)[0];
is(psql_value($par . "SET enable_hashagg = off; $grouped LIMIT 1;"), $first, 'GROUP BY ... LIMIT 1 finishes');

# an ERROR in the leader right after it attached a worker's state, while the
# other worker still waits: no hang, and no segment or memory left behind
my $dsm_type = psql_value('SHOW dynamic_shared_memory_type;');
sub shm_segments
{
	my %seg;
	return \%seg unless $dsm_type eq 'posix' && opendir(my $d, '/dev/shm');
	for my $f (readdir $d)
	{
		next unless $f =~ /^PostgreSQL\.\d+$/;
		$seg{$f} = -s "/dev/shm/$f" // 0;
	}
	closedir $d;
	return \%seg;
}
my $fail = $par . "SET parallel_leader_participation = off; SET gpuselect.test_fail_shared_attach = on;\n"
  . "SELECT gpu_quantiles(x, $fr) FROM gs_sh;\n";
my $mem = q{SELECT 'mem:' || sum(total_bytes) FROM pg_backend_memory_contexts;};
my $before = shm_segments();
my ($rc, $out) = psql($fail . $mem . ($fail x 20) . $mem . "RESET gpuselect.test_fail_shared_attach;\n"
	  . $shared . "$gpu;" . $shared, on_error_stop => 0);
my @errs = $out =~ /ERROR:\s+(XX000):\s+gpuselect: test hook/mg;
is(scalar(@errs), 21, 'the hook failed every query after attaching') or diag(substr($out, 0, 3000));
unlike($out, qr/canceling statement due to statement timeout/, 'no query hung');
my @mem = $out =~ /^mem:(\d+)$/mg;
cmp_ok($mem[1] - $mem[0], '<=', 256 * 1024, 'backend memory back to its baseline') if @mem == 2;
($s, $rest) = split_out($out);
my ($last) = grep { !/^mem:|ERROR|DETAIL|HINT|CONTEXT|LOCATION/ } @$rest;
is($last, $want_plain, 'the session still works afterwards');
cmp_ok($s->[1] - $s->[0], '>=', 3, 'and passes states through shared memory again');
SKIP:
{
	skip "dynamic_shared_memory_type is $dsm_type, not posix", 1 unless $dsm_type eq 'posix';
	my $after = shm_segments();
	my $new = 0;
	$new += $after->{$_} for grep { !exists $before->{$_} } keys %$after;
	# 21 leaked segments would be ~50 MB; the server's own may add a few MB
	cmp_ok($new, '<', 8 << 20, 'no shared memory segments left behind') or diag(join(' ', %$after));
}

psql_value('DROP TABLE gs_sh;');
done_testing();
