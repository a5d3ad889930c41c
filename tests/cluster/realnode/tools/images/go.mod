module github.com/kpysched/kpysched/tests/cluster/realnode/tools/images

go 1.26.0
