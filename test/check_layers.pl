#!/usr/bin/env perl
# test/check_layers.pl [SRCDIR] — the layering rule of src/ (src/LAYERS):
# every #include "..." of a src/ header names the header's folder, and
# points to the including file's own folder or to a layer below it; folders
# of one layer include each other in no cycle; and inside a folder no
# header includes itself through others.
# Prints each violation and exits 1; run by test/run-all.sh ("layers").
use strict;
use warnings;
use File::Basename qw(dirname basename);
use File::Find;

my $src = shift // dirname(__FILE__) . '/../src';
$src =~ s{/+$}{};

# ---- the layer order: src/LAYERS, lowest first ----
my %rank;
open(my $lf, '<', "$src/LAYERS") or die "check_layers: $src/LAYERS: $!\n";
my $r = 0;
while (<$lf>)
{
	s/#.*//;
	my @dirs = split;
	next unless @dirs;
	$rank{$_} = $r for @dirs;
	$r++;
}
close $lf;

my @files;
find({ no_chdir => 1, wanted => sub { push @files, $_ if /\.[ch]$/ && -f $_ } }, $src);
@files = sort @files;

my @bad;
my (%dir_edge, %file_edge);
my $nincl = 0;

# "state/spill.c" -> ("state", "state/spill")
sub folder_of { my $d = dirname($_[0]); return $d eq '.' ? '.' : $d; }

for my $path (@files)
{
	(my $rel = $path) =~ s{^\Q$src\E/}{};
	my $from = folder_of($rel);
	if (!exists $rank{$from})
	{
		push @bad, "$rel: folder \"$from\" is not in src/LAYERS";
		next;
	}
	open(my $fh, '<', $path) or die "check_layers: $path: $!\n";
	while (my $line = <$fh>)
	{
		next unless $line =~ /^\s*#\s*include\s+"([^"]+)"/;
		my $inc = $1;
		$nincl++;
		if ($inc !~ m{/} && -f dirname($path) . "/$inc" && $from ne '.')
		{
			push @bad, "$rel:$.: #include \"$inc\" names no folder (write \"$from/$inc\")";
			next;
		}
		next unless -f "$src/$inc";    # PostgreSQL's or kernels/' header
		my $to = folder_of($inc);
		if (!exists $rank{$to})
		{
			push @bad, "$rel:$.: #include \"$inc\": folder \"$to\" is not in src/LAYERS";
			next;
		}
		if ($rank{$to} > $rank{$from})
		{
			push @bad, "$rel:$.: #include \"$inc\" points up: $from/ is below $to/ in src/LAYERS";
			next;
		}
		if ($to ne $from)
		{
			$dir_edge{$from}{$to} = "$rel:$." if $rank{$to} == $rank{$from};
			next;
		}
		# a .c is never included: a cycle of files is one of headers
		$file_edge{$rel}{$inc} //= "$rel:$." if $rel =~ /\.h$/;
	}
	close $fh;
}

# ---- cycles: folders of one layer, files of one folder ----
sub cycles
{
	my ($edges, $what) = @_;
	my (%state, @stack, %seen_cycle);
	my $visit;
	$visit = sub {
		my $n = shift;
		$state{$n} = 1;
		push @stack, $n;
		for my $m (sort keys %{ $edges->{$n} // {} })
		{
			if (($state{$m} // 0) == 1)
			{
				my @c = @stack[(grep { $stack[$_] eq $m } 0 .. $#stack)[0] .. $#stack];
				my $key = join ' ', sort @c;
				next if $seen_cycle{$key}++;
				push @bad, "$what cycle: " . join(' -> ', @c, $m) . "  ("
				  . join(', ', map { $edges->{ $c[$_] }{ $c[($_ + 1) % @c] } } 0 .. $#c) . ")";
			}
			elsif (!$state{$m})
			{
				$visit->($m);
			}
		}
		pop @stack;
		$state{$n} = 2;
	};
	$state{$_} or $visit->($_) for sort keys %$edges;
}
cycles(\%dir_edge, 'folder');
cycles(\%file_edge, 'file');

print "$_\n" for @bad;
printf "layers: %d files, %d includes, %d layers: %s\n", scalar @files, $nincl, $r,
  @bad ? scalar(@bad) . " violation(s)" : "ok";
exit(@bad ? 1 : 0);
