#!/usr/bin/perl
# Rewrites the citations in Go comments so that each names a document of this
# repo: swamp-format §N (docs/swamp-format.md), design §N (docs/design.md).
# Only comments change; string literals and code are left as they are.
# Idempotent: running it twice is running it once.
#
#   perl docs/rewrite-citations.pl $(git ls-files '*.go')
#
# What it rewrites, in each comment:
#   - durability-notes §1.1, §1.2 → design §2.1; §1.7 → design §2.2; §5 → design §2.3
#   - the gotchas G1–G26 → swamp-format §9.1–§9.26 ("gotcha G7" too)
#   - the ambiguities A1–A17 (in a citation: "(A8, …)", "swamp-format A13") → §10.1–§10.17
#   - swamp-format.md §N → swamp-format §N; a bare §N (not after another
#     document's name) → swamp-format §N, once per run of citations
#   - swamp-format.md (without a section) → docs/swamp-format.md; Appendix A → swamp-format Appendix A
#   - the project's issue numbers: "(issue #23)", "(#24, …)", "(…; issue #9)",
#     "Target (issue #23):" and the like (swamp's #3316 and #3955 and
#     swamp-club#N are swamp's own and stay)
#   - file names that no longer exist → the files that hold that code now
# What is left for a person is printed: grep the output of the last line.
use strict;
use warnings;

my %durability = ('1.1' => '2.1', '1.2' => '2.1', '1.7' => '2.2', '5' => '2.3');
# Each beside the file whose comment names it (same directory).
my %moved = (
    'doctorlocks.go'  => 'locks.go',     # ops/doctor
    'doctorchecks.go' => 'codes.go',     # ops/doctor
    'doctorswamp.go'  => 'swamp.go',     # ops/doctor
    'cmd_swamp.go'    => 'swamp.go',     # cmd/swampj
);
my $num = qr/\d+(?:\.\d+)*/;
my $sec = qr/§$num(?:–$num)?/;
my $sep = qr/(?:, |,\s*\n?|\/| and | or |; )/;

sub durability {
    my ($g) = @_;
    $g =~ s/§($num)/'§' . ($durability{$1} \/\/ $1)/ge;
    return "design $g";
}

my $prev = '';    # the comment before this one (a citation may wrap)

sub fix {
    my ($c) = @_;
    my $orig = $c;

    # Another document of this repo, or the project's own notes.
    $c =~ s/durability-notes ($sec(?:(?:, | and )$sec(?: step \d+)?)*)/durability($1)/ge;
    $c =~ s/\bgotcha (G\d)/$1/g;
    $c =~ s/\bG([1-9]|1\d|2[0-6])\b/§9.$1/g;
    $c =~ s/(swamp-format(?:\.md)? )A([1-9]|1[0-7])\b/$1§10.$2/g;
    $c =~ s/(?<![\w.-])A([1-9]|1[0-7])(?=[,;)])/§10.$1/g;
    $c =~ s/swamp-format\.md(?= §)/swamp-format/g;
    $c =~ s/(?<![\w\/.-])swamp-format\.md\b/docs\/swamp-format.md/g;
    $c =~ s/(?<!swamp-format )(?<!, )\bAppendix A\b/swamp-format Appendix A/g;

    # A run of citations takes the document's name once, at its head.
    my $wrapped = $prev =~ /(?:swamp-format(?:\.md)?|design|$sec)[,;]?\s*$/;
    $c =~ s{((?:^|(?<=[\s(]))(?:([^\s§]+) )?)($sec(?:$sep$sec)*)}{
        my ($lead, $word, $run) = ($1, $2 // '', $3);
        my $start = $-[0] == 0 || substr($c, 0, $-[0]) =~ /^\/\/\s*$/;
        if ($word =~ /(?:^|\()(?:swamp-format|design)$/ || $word =~ /\.(?:html|md)$/
            || ($wrapped && $start && ($lead eq '' || $lead =~ m{^//\s*$}))) {
            "$lead$run";
        } else {
            "${lead}swamp-format $run";
        }
    }ge;

    # The project's issue numbers (three or more digits are swamp's).
    my $iss = qr/(?<![\w-])(?:issue )?#\d{1,2}(?:\.\d+)?(?:'s)?(?![\d])/;
    $c =~ s/(Targets?) \($iss(?:, target \d+)?(?:; $iss)?\)/$1/g;
    $c =~ s/ \($iss(?:,? (?:items?|bugs?|finding) [\d ,and]+)?\)//g;
    $c =~ s/\($iss(?: [a-z][^;:,()]*?)?[;,:] /(/g;
    $c =~ s/[;,] $iss(?:, $iss)*\)/)/g;
    $c =~ s/ \($iss(?:, target \d+)?(?:; $iss)?\)//g;

    for my $old (keys %moved) {
        $c =~ s/(?<![\w\/])\Q$old\E/$moved{$old}/g;
    }
    $prev = $c;
    return $c;
}

local $/;
my $left = 0;
for my $file (@ARGV) {
    next unless $file =~ /\.go$/;
    open(my $in, '<', $file) or die "$file: $!";
    my $src = <$in>;
    close $in;
    $prev = '';
    my $out = $src;
    $out =~ s{(//[^\n]*|/\*.*?\*/)|("(?:[^"\\\n]|\\.)*"|`[^`]*`|'(?:[^'\\\n]|\\.)*')}{
        defined $1 ? fix($1) : $2
    }gse;
    if ($out ne $src) {
        open(my $o, '>', $file) or die "$file: $!";
        print $o $out;
        close $o;
    }
}
