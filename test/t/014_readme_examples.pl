# The README's examples run as pasted (issue 32 item 8), and the docs' links
# lead somewhere.
#
# 1. Every ```sql block of README.md, in order, each in a new psql session
#    (as a reader pastes them), in one fresh database where the extension is
#    installed, with ON_ERROR_STOP: any error fails the test.  A block whose
#    fence says ```sql norun (with its reason after it, e.g. it needs the
#    reader's database name) is skipped; there may be few of them.
# 2. Every relative link in README.md and docs/*.md names a file or folder
#    that exists, and a #fragment into a Markdown file names one of its
#    headings (GitHub's anchors: lowercase, punctuation dropped, spaces to -).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use GsTest;
use Test::More;
use File::Basename qw(dirname);
use File::Spec;

my $root = File::Spec->rel2abs("$FindBin::Bin/../..");

sub slurp
{
	my ($file) = @_;
	open(my $fh, '<', $file) or die "$file: $!";
	local $/;
	my $text = <$fh>;
	close $fh;
	return $text;
}

# (info string, body) of every fenced block of a Markdown text
sub fenced_blocks
{
	my ($text) = @_;
	my @blocks;
	my ($info, $body);
	for my $line (split /\n/, $text)
	{
		if (!defined $info)
		{
			($info, $body) = ($1, '') if $line =~ /^```(.*)$/;
		}
		elsif ($line =~ /^```\s*$/)
		{
			push @blocks, [ $info, $body ];
			undef $info;
		}
		else
		{
			$body .= "$line\n";
		}
	}
	die "unterminated fenced block ($info)\n" if defined $info;
	return @blocks;
}

# --- 1. the README's SQL examples
my $db = 'gs_readme_examples';
psql_value("DROP DATABASE IF EXISTS $db;");
psql_value("CREATE DATABASE $db;");
psql_value('CREATE EXTENSION gpuselect;', db => $db);

my @sql = grep { $_->[0] =~ /^sql\b/ } fenced_blocks(slurp("$root/README.md"));
my @run = grep { $_->[0] =~ /^sql\s*$/ } @sql;
my @norun = grep { $_->[0] !~ /^sql\s*$/ } @sql;
cmp_ok(scalar @run, '>=', 5, 'README has SQL examples to run');
cmp_ok(scalar @norun, '<=', 2, 'few README SQL blocks are marked norun');
like($_->[0], qr/^sql norun\s+\S/, "a skipped block says why: $_->[0]") for @norun;

my $n = 0;
for my $block (@run)
{
	$n++;
	my ($rc, $out) = psql($block->[1], db => $db, on_error_stop => 1);
	my ($first) = $block->[1] =~ /^(.*)$/m;
	is($rc, 0, "README SQL block $n runs ($first)") or diag($out);
	unlike($out, qr/\bERROR\b/, "README SQL block $n: no error") or diag($out);
	# what the README says the rewrite example shows
	like($out, qr/gs_planner_builtin_cont/, "README SQL block $n: EXPLAIN shows the rewrite")
	  if $block->[1] =~ /accelerate_builtins = on/;
}
psql_value("DROP DATABASE $db;");

# --- 2. relative links in README.md and docs/*.md
sub anchors
{
	my ($file) = @_;
	my %a;
	my $in_fence = 0;
	for my $line (split /\n/, slurp($file))
	{
		$in_fence = !$in_fence if $line =~ /^```/;
		next if $in_fence || $line !~ /^#+\s+(.*?)\s*$/;
		my $slug = lc $1;
		$slug =~ s/[^\w\- ]//g;
		$slug =~ s/ /-/g;
		$a{$slug} = 1;
	}
	return \%a;
}

my @docs = ("$root/README.md", glob("$root/docs/*.md"));
my ($links, @bad) = (0);
for my $file (@docs)
{
	my $text = slurp($file);
	$text =~ s/^```.*?^```\s*$//msg;	# no links inside code blocks
	$text =~ s/`[^`\n]*`//g;			# nor in code spans
	while ($text =~ /\]\(([^)\s]+)\)/g)
	{
		my $link = $1;
		next if $link =~ m{^[a-z]+:}i;	# http:, https:, mailto:
		$links++;
		my ($path, $frag) = split /#/, $link, 2;
		my $target = $path eq '' ? $file : File::Spec->catfile(dirname($file), $path);
		my $where = File::Spec->abs2rel($file, $root) . ": $link";
		if (!-e $target)
		{
			push @bad, "$where (no such file)";
		}
		elsif (defined $frag && $target =~ /\.md$/ && !anchors($target)->{$frag})
		{
			push @bad, "$where (no such heading)";
		}
	}
}
cmp_ok($links, '>', 20, "links found in README.md and docs/*.md ($links)");
is(join("\n", @bad), '', 'every relative link leads to an existing file and heading');

done_testing();
