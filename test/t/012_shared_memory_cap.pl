# Issue 29: the dynamic shared memory that sessions create for parallel
# partial states (key arenas, src/arena.c; per-state segments,
# src/shared_state.c) is bounded server-wide by gpuselect.max_shared_memory
# (src/shm_budget.c), sized to need, and given back at transaction end:
#   (a) N sessions of a non-superuser with default settings run parallel
#       gpu_quantile(s) queries, then idle: the budget's counter never passes
#       the cap, the idle sessions hold none of it (counter and the /dev/shm
#       segments their backends map), and the answers equal the built-ins;
#   (b) past the cap (a tiny one, 0): the same answers, and the refusals are
#       counted;
#   (c) a backend killed (kill -9) while its transaction holds an arena: the
#       postmaster restarts the server, and every segment the cluster had
#       mapped is gone from /dev/shm (PostgreSQL's DSM cleanup covers ours).
# A cluster of its own (GsTest::service_cluster_start): the cap is a
# server-wide setting, and (c) restarts the server.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use GsTest;
use Test::More;
use File::Temp qw(tempdir);

my $nsessions = $ENV{GS_CAP_SESSIONS} // 20;
my $cap_mb = 48;
my $h = GsTest::service_cluster_start("gpuselect.max_shared_memory = '${cap_mb}MB'",
	'max_worker_processes = 16', 'max_parallel_workers = 16', 'max_connections = ' . ($nsessions + 30));
my $dsm_type = psql_value('SHOW dynamic_shared_memory_type;');
my $pm_pid = do { open(my $f, '<', "$h->{dir}/data/postmaster.pid") or die "$!"; my $l = <$f>; chomp $l; $l };

# 450000 float8 rows: with 2 workers and the leader each partial state holds
# ~1.2 MB of keys (over the 1 MB of a shared segment and of the arena's note)
psql_value(q{
CREATE EXTENSION gpuselect;
CREATE TABLE gs_cap AS
  SELECT CASE WHEN g % 997 = 0 THEN NULL ELSE (random() * 2e6 - 1e6)::float8 END AS x
  FROM generate_series(1, 450000) g;
ANALYZE gs_cap;
CREATE ROLE gs_plain LOGIN;
GRANT SELECT ON gs_cap TO gs_plain;
});
my $fr = q{ARRAY[0, 0.001, 0.25, 0.5, 0.75, 0.999, 1]::float8[]};
my $gpu = "SELECT concat_ws(' | ', gpu_quantiles(x, $fr), gpu_quantile(x, 0.3)) FROM gs_cap;\n";
my $want = psql_value("SELECT concat_ws(' | ', percentile_disc($fr) WITHIN GROUP (ORDER BY x),"
	  . " percentile_disc(0.3) WITHIN GROUP (ORDER BY x)) FROM gs_cap;");
my $par = force_parallel_executor(2) . "SET gpuselect.device = 'cpu'; SET gpuselect.gpu_min_rows = 0;\n"
  . "SET statement_timeout = '120s';\n";

sub status
{
	my %st;
	for my $l (split /\n/, psql_value("SELECT name || '=' || coalesce(value, '') FROM gpuselect_status()"))
	{
		my ($k, $v) = split /=/, $l, 2;
		$st{$k} = $v;
	}
	return \%st;
}

# /dev/shm files the cluster's backends map, less the postmaster's (the DSM
# control segment): name => bytes.  With $ours, only those of more than 1 MB,
# as ours are (an arena: 4 MB and a page at least; a shared state: 1 MB and a
# header): PostgreSQL keeps a 192 kB segment of its own per session that ran
# a parallel query (the session's record typmod registry, session.c).
sub mapped_segments
{
	my ($ours) = @_;
	my %seg;
	my %pm;
	my @pids = split /\n/, psql_value('SELECT pid FROM pg_stat_activity');
	for my $pid ($pm_pid, @pids)
	{
		open(my $m, '<', "/proc/$pid/maps") or next;
		while (<$m>)
		{
			next unless m{(/dev/shm/PostgreSQL\.\d+)};
			if ($pid == $pm_pid) { $pm{$1} = 1; }
			else { $seg{$1} = -s $1 // 0; }
		}
		close $m;
	}
	delete $seg{$_} for keys %pm;
	if ($ours) { $seg{$_} <= 1 << 20 and delete $seg{$_} for keys %seg; }
	return \%seg;
}
sub total { my ($s) = @_; my $t = 0; $t += $_ for values %$s; return $t; }

# (a) N sessions of a plain role: two transactions each (the first passes its
# states the slow way, the second gets an arena), then they idle until told
my $dir = tempdir('gs-cap-XXXXXX', TMPDIR => 1, CLEANUP => 1);
chmod 0777, $dir;
my @sessions;
{
	local $ENV{PGUSER} = 'gs_plain';
	for my $i (1 .. $nsessions)
	{
		push @sessions, GsTest::psql_bg($par . $gpu . $gpu
			  . "\\! touch $dir/done.$i\n"
			  . "\\! for i in \$(seq 1200); do [ -e $dir/go ] && break; sleep 0.1; done\n"
			  . "SELECT 'idle:' || value FROM gpuselect_status() WHERE name = 'parallel_arena_bytes';\n");
	}
}
my $cap = $cap_mb << 20;
my $peak = 0;
my $all_done = GsTest::wait_for(sub {
	my $v = status()->{shared_memory_bytes} // 0;
	$peak = $v if $v > $peak;
	return scalar(grep { -e "$dir/done.$_" } 1 .. $nsessions) == $nsessions;
}, 240);
ok($all_done, "$nsessions sessions ran their queries");
my $st = status();
my $seg = mapped_segments(1);
is($st->{max_shared_memory_bytes}, $cap, 'status: the cap');
cmp_ok($peak, '<=', $cap, "the server-wide counter stayed within the cap while they ran (peak $peak)");
is($st->{shared_memory_bytes}, 0, "$nsessions idle sessions: none of the budget in use");
cmp_ok(total($seg), '<=', $cap, "$nsessions idle sessions map " . total($seg) . " bytes of /dev/shm segments of our sizes, within the cap")
  if $dsm_type eq 'posix';
open(my $go, '>', "$dir/go") or die "$!";
close $go;
my ($bad, $arenas) = (0, 0);
for my $s (@sessions)
{
	my ($rc, $out) = GsTest::psql_wait($s);
	my @ans = grep { /\|/ } split /\n/, $out;
	$bad++ unless $rc == 0 && @ans == 2 && $ans[0] eq $want && $ans[1] eq $want;
	diag($out) if $rc != 0;
	$arenas++ if $out =~ /^idle:0$/m;
}
is($bad, 0, "$nsessions sessions: answers equal to the built-ins");
is($arenas, $nsessions, 'no session holds an arena between transactions');

# the same session's second transaction gets an arena sized to its need,
# not gpuselect.parallel_arena_size
my $status_sql = q{SELECT 'st:' || string_agg(name || '=' || coalesce(value, ''), ',' ORDER BY name) FROM gpuselect_status()
  WHERE name IN ('parallel_arena_last_bytes', 'states_in_arena', 'shared_memory_refused');};
sub st_lines
{
	my ($out) = @_;
	return [ map { { map { split /=/, $_, 2 } split /,/, $_ } } $out =~ /^st:(.*)$/mg ];
}
my $out = psql_value($par . $gpu . $gpu . $status_sql);
my $sts = st_lines($out);
my @ans = grep { /\|/ } split /\n/, $out;
is_deeply(\@ans, [ $want, $want ], 'one session alone: equal to the built-ins');
cmp_ok($sts->[0]{states_in_arena}, '>=', 2, 'the second transaction used an arena');
ok($sts->[0]{parallel_arena_last_bytes} > 0 && $sts->[0]{parallel_arena_last_bytes} <= 32 << 20,
	"sized to need: $sts->[0]{parallel_arena_last_bytes} bytes for 6 partial states (a 4 MB chunk each), not 256 MB");

# (b) past the cap: a cap of one arena chunk, then none
for my $c ('4MB', '0')
{
	psql_value("ALTER SYSTEM SET gpuselect.max_shared_memory = '$c'; SELECT pg_reload_conf();");
	GsTest::wait_for(sub { psql_value('SHOW gpuselect.max_shared_memory') eq ($c eq '0' ? '0' : $c) }, 10);
	my $before = status()->{shared_memory_refused};
	$out = psql_value($par . $gpu . $gpu . $gpu . $status_sql);
	@ans = grep { /\|/ } split /\n/, $out;
	is_deeply(\@ans, [ ($want) x 3 ], "max_shared_memory = $c: equal to the built-ins");
	cmp_ok(st_lines($out)->[0]{shared_memory_refused}, '>', $before, "max_shared_memory = $c: refusals counted");
	is(status()->{shared_memory_bytes}, 0, "max_shared_memory = $c: none in use afterwards");
}
psql_value('ALTER SYSTEM RESET gpuselect.max_shared_memory; SELECT pg_reload_conf();');
GsTest::wait_for(sub { psql_value('SHOW gpuselect.max_shared_memory') eq "${cap_mb}MB" }, 10);

# (c) kill -9 a backend whose transaction holds an arena (and whose workers'
# states went through it): crash restart, and nothing of ours is left
SKIP:
{
	skip "dynamic_shared_memory_type is $dsm_type, not posix", 3 unless $dsm_type eq 'posix';
	my $s = GsTest::psql_bg($par . $gpu . "BEGIN;\n" . $gpu
		  . "\\o $dir/pid\nSELECT pg_backend_pid();\n\\o\n"
		  . "\\! touch $dir/held\n"
		  . "\\! for i in \$(seq 600); do [ -e $dir/release ] && break; sleep 0.1; done\n",
		on_error_stop => 0);
	ok(GsTest::wait_for(sub { -e "$dir/held" }, 120), 'a transaction holds an arena');
	my $pid = do { open(my $f, '<', "$dir/pid") or die "$!"; local $/; my $p = <$f>; $p =~ s/\s+//g; $p };
	my %before = %{ mapped_segments() };
	# the victim's own mappings: its arena among them
	my @victim;
	open(my $m, '<', "/proc/$pid/maps") or die "$!";
	while (<$m>) { push @victim, $1 if m{(/dev/shm/PostgreSQL\.\d+)}; }
	close $m;
	my %vict = map { $_ => 1 } @victim;
	cmp_ok(total({ map { $_ => $before{$_} } grep { exists $before{$_} } keys %vict }), '>=', 4 << 20,
		'the victim maps its arena');
	kill 'KILL', $pid;
	# psql waits in its shell command: let it go (its next command fails)
	open(my $rel, '>', "$dir/release") or die "$!";
	close $rel;
	GsTest::psql_wait($s);
	# the postmaster has restarted the server once a new session works
	my $back = GsTest::wait_for(sub { my ($rc) = psql('SELECT 1'); $rc == 0 && status()->{shared_memory_bytes} == 0 }, 60);
	my @left = grep { -e $_ } keys %before;
	ok($back && !@left, 'after the crash restart no segment of the old server is left in /dev/shm')
	  or diag("left: @left");
}

GsTest::service_cluster_stop($h);

# (d) preloaded (no GPU service, no key pool): the counter is in the main
# shared memory before PostgreSQL 17, in the DSM registry from 17 on
$h = GsTest::service_cluster_start("shared_preload_libraries = 'gpuselect'", 'gpuselect.service = off',
	'gpuselect.key_pool_size = 0', "gpuselect.max_shared_memory = '${cap_mb}MB'");
psql_value(q{CREATE EXTENSION gpuselect;
CREATE TABLE gs_cap AS SELECT (random() * 2e6 - 1e6)::float8 AS x FROM generate_series(1, 450000) g;
ANALYZE gs_cap;});
$want = psql_value("SELECT concat_ws(' | ', percentile_disc($fr) WITHIN GROUP (ORDER BY x),"
	  . " percentile_disc(0.3) WITHIN GROUP (ORDER BY x)) FROM gs_cap;");
$out = psql_value($par . $gpu . $gpu . $status_sql);
@ans = grep { /\|/ } split /\n/, $out;
is_deeply(\@ans, [ $want, $want ], 'preloaded: equal to the built-ins');
cmp_ok(st_lines($out)->[0]{states_in_arena}, '>=', 2, 'preloaded: an arena');
$st = status();
is($st->{shared_memory_budget}, (psql_value('SHOW server_version_num') >= 170000 ? 'dsm registry' : 'main shared memory'),
	"preloaded: the counter in the $st->{shared_memory_budget}");
is($st->{shared_memory_bytes}, 0, 'preloaded: none in use afterwards');
GsTest::service_cluster_stop($h);
done_testing();
