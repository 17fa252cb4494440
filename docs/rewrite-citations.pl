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
# What is left for a person to reword (a new comment the rules do not cover):
#   grep -rnE '#[0-9]{1,2}\b|\b[GA][0-9]{1,2}\b|durability-notes|swamp-format\.md §' --include=*.go . \
#     | grep -vE '#(3316|3955)\b|swamp-club#'
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

# Comments the rules above cannot reword (a citation wrapped across lines,
# an issue number in the middle of a sentence): exact text, old => new.
my @literal = (
    "// rows is the table, in order. Targets are issue #23's where it decided\n// them, else #16's (and #11's, #13's).\n"
        => "// rows is the table, in order, each row with its target where one is set.\n",
    "// States the real swamp leaves after ordinary use of a namespaced repo\n// (issue #9): a .log"
        => "// States the real swamp leaves after ordinary use of a namespaced repo:\n// a .log",
    "// TestRealSwampReverseAfterUse (#3316 case C, #9.3, and the doctor note\n// of #9): after"
        => "// TestRealSwampReverseAfterUse (#3316 case C, and what the doctor notes\n// about it): after",
    "baseline is lost\n//     (issue #11).\n" => "baseline is lost.\n",
    "// Targets: rebuild/walk ≤ 2.5 (issue #23) and rebuild-populated/walk ≤ 2\n// (issue #16, target 4), verify/rebuild ≤ 1.\n"
        => "// Targets: rebuild/walk ≤ 2.5, rebuild-populated/walk ≤ 2 and\n// verify/rebuild ≤ 1.\n",
    "outside .swamp/ (issue\n// #24, swamp-format.md §13.7)." => "outside .swamp/\n// (swamp-format §13.7).",
    "linked in complete\n\t\t// (#23): it is visible" => "linked in complete:\n\t\t// it is visible",
    "(journal/hold.go, issue\n// #23): they run" => "(journal/hold.go):\n// they run",
    "// (Before #23 the second waited for the journal lock and timed out.)\n" => "",
    "(issue #24,\n// swamp-format.md §13.9)." => "(swamp-format\n// §13.9).",
    "(swamp-format.md §13.2–13.5,\n// issue #24): each" => "(swamp-format §13.2–13.5):\n// each",
    "one after the other (issue #4's single-write target)." => "one after the other.",
    "the baseline issue #23 decided on for migrations" => "the baseline for migrations",
    "TestDoctorRepairClearsStaleMark is issue #25's first case: a write made"
        => "TestDoctorRepairClearsStaleMark: a write made",
    "// The fault matrix of issue #10: every" => "// The fault matrix: every",
    "// The small ones of #25: what -v and the progress line say." => "// What -v and the progress line say.",
    "// No target (issue #13 asks for the figure in the bench table)." => "// No target: the figure is reported in the bench table.",
    "// The interop suite of issue #9: the real" => "// The interop suite: the real",
    "(the catalog's model_name, issue #9 bug 2)" => "(the catalog's model_name)",
    "// Tests of issue #10's smaller items, against the real binary." => "// Smaller cases, against the real binary.",
    "(#24,\n// §13.2: 06b6147's" => "(swamp-format\n// §13.2: 06b6147's",
    "tier (§2.8, Appendix A)." => "tier (§2.8).",
    # README sections that moved to docs/.
    "The README's crash\n// report section lists the same keys" => "The README's\n// \"Refusal reasons\" list has the same keys",
    "see README \"Remote datastores\" for why." => "see docs/remote.md for why.",
);

local $/;
for my $file (@ARGV) {
    next unless $file =~ /\.go$/;
    open(my $in, '<', $file) or die "$file: $!";
    my $src = <$in>;
    close $in;
    $prev = '';
    my $out = $src;
    for (my $i = 0; $i < @literal; $i += 2) {
        my ($old, $new) = @literal[$i, $i + 1];
        $out =~ s/\Q$old\E/$new/g;
    }
    $out =~ s{(//[^\n]*|/\*.*?\*/)|("(?:[^"\\\n]|\\.)*"|`[^`]*`|'(?:[^'\\\n]|\\.)*')}{
        defined $1 ? fix($1) : $2
    }gse;
    if ($out ne $src) {
        open(my $o, '>', $file) or die "$file: $!";
        print $o $out;
        close $o;
    }
}
