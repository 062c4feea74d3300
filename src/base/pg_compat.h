/*
 * pg_compat.h — the one place where gpuselect copes with the differences
 * between the PostgreSQL major versions it supports (15, 16, 17, 18).
 *
 * The code is written against the newest API; this header supplies it on
 * the older versions (PG_VERSION_NUM guards only, no run-time checks).
 * Include it right after "postgres.h".  When a version is dropped, its
 * block goes.
 *
 *   - pg_noreturn (18): a function specifier before the declaration;
 *     pg_attribute_noreturn() after it is gone in 18.
 *   - ProcNumber, MyProcNumber, ParallelLeaderProcNumber (17): were
 *     BackendId, MyBackendId, ParallelLeaderBackendId in storage/backendid.h
 *     (1-based then, 0-based now: gpuselect only compares them for equality).
 *   - GS_PG_MODULE_MAGIC: PG_MODULE_MAGIC_EXT (18) gives the module's name
 *     and version to pg_get_loaded_modules(); plain PG_MODULE_MAGIC before.
 *   - gs_flatten_group_exprs (18): a parsed query with GROUP BY refers to
 *     its grouped expressions through Vars of an RTE_GROUP entry
 *     (hasGroupRTE), valid above the grouping step only; an expression moved
 *     below it (planner.c: a fraction into an aggregate's arguments) needs
 *     the expressions themselves.  Before 18 the parse tree has them already.
 *     GS_QUERY_FROM_LENGTH: the range table's length without that entry.
 *   - GS_PROCESSED_GROUP_CLAUSE (16): the planner's GROUP BY with redundant
 *     keys removed is root->processed_groupClause; before 16 the planner
 *     used parse->groupClause itself.
 *   - GS_PGSTAT_COUNT_TUPLES_RETURNED (16): n more tuples in pg_stat's
 *     seq_tup_read, as pgstat_count_heap_getnext counts one; the counter
 *     is counts.tuples_returned from 16, t_counts.t_tuples_returned before.
 *   - GS_GROUPBY_PATHKEYS (16): the GROUP BY's own pathkeys are the first
 *     root->num_groupby_pathkeys of root->group_pathkeys (after them come
 *     the aggregates' ORDER BY keys); before 16 all of them.
 *   - GS_EXPLAIN_RTABLE_SIZE (18): the range table's length as EXPLAIN
 *     counts it for column prefixes (without the RTE_GROUP entry of 18).
 *   - GS_ADJUST_APPENDREL_MULTILEVEL (16): adjust_appendrel_attrs_multilevel
 *     takes the child and top RelOptInfos; before 16 their relids.
 *   - GS_HAVE_DSM_REGISTRY (17): GetNamedDSMSegment (storage/dsm_registry.h)
 *     gives a library that is not preloaded a named, server-wide piece of
 *     shared memory; before 17 shm_budget.c takes its few bytes from the main
 *     segment with ShmemInitStruct instead.
 *   - GS_EXECUTOR_RUN_PARAMS / _ARGS (18): ExecutorRun (and its hook) lost
 *     its execute_once argument.
 *   - gs_create_wait_set (17): CreateWaitEventSet takes a ResourceOwner (NULL:
 *     not tracked); a MemoryContext before.  In 18 it is declared in
 *     storage/waiteventset.h, which storage/latch.h includes.
 *
 * The same in 15 to 18 for what gpuselect uses (the headers compared, and
 * -Werror builds against each): the hooks it installs, ExecutorStart
 * (void in every release; a bool-returning variant in 18's development was
 * reverted before 18.0), ExecutorRun (but for execute_once, above), planner_hook and create_upper_paths_hook; the
 * planner calls planner_groups.c makes (create_agg_path, create_gather_path,
 * get_agg_clause_costs, examine_variable, DecodeUnits); DefineCustom*Variable and MarkGUCPrefixReserved,
 * dsm_create/attach/pin_mapping/find_mapping and DSM_CREATE_NULL_IF_MAXSEGMENTS,
 * AllocSetContextCreate, RegisterXactCallback, the aggregate support API
 * (AggCheckCallContext, AggGetAggref), ConditionVariable and wait events,
 * SharedFileSetInit/Attach and the FileSet BufFile calls (BufFileCreateFileSet,
 * BufFileOpenFileSet, BufFileExportFileSet: 15 already has the FileSet API).
 * 16 builds extensions with -fvisibility=hidden: PG_FUNCTION_INFO_V1 and
 * fmgr.h's _PG_init declaration export what the server looks up.
 */
#ifndef GS_PG_COMPAT_H
#define GS_PG_COMPAT_H

#include "postgres.h"

#if PG_VERSION_NUM < 150000
#error "gpuselect needs PostgreSQL 15 or later"
#endif

/* ---- 18: pg_noreturn replaces pg_attribute_noreturn() ---- */
#ifndef pg_noreturn
#define pg_noreturn __attribute__((noreturn))
#endif

/* ---- 17: BackendId became ProcNumber (storage/procnumber.h) ---- */
#if PG_VERSION_NUM >= 170000
#include "storage/procnumber.h"
#else
#include "storage/backendid.h"
typedef BackendId ProcNumber;
#define MyProcNumber				MyBackendId
#define ParallelLeaderProcNumber	ParallelLeaderBackendId
#endif

/* ---- 18: PG_MODULE_MAGIC_EXT (module name and version) ---- */
#ifndef GS_EXTVERSION
#define GS_EXTVERSION "unknown"		/* the Makefile passes default_version */
#endif
#if PG_VERSION_NUM >= 180000
#define GS_PG_MODULE_MAGIC PG_MODULE_MAGIC_EXT(.name = "gpuselect", .version = GS_EXTVERSION)
#else
#define GS_PG_MODULE_MAGIC PG_MODULE_MAGIC
#endif

/* ---- 18: Vars of the RTE_GROUP entry (parse trees with GROUP BY) ---- */
#if PG_VERSION_NUM >= 180000
#include "optimizer/optimizer.h"
#define gs_flatten_group_exprs(query, node) \
	((query)->hasGroupRTE ? flatten_group_exprs(NULL, (query), (node)) : (node))
#define GS_QUERY_FROM_LENGTH(query) (list_length((query)->rtable) - ((query)->hasGroupRTE ? 1 : 0))
#else
#define gs_flatten_group_exprs(query, node) (node)
#define GS_QUERY_FROM_LENGTH(query) list_length((query)->rtable)
#endif

/* ---- 16: root->processed_groupClause ---- */
#if PG_VERSION_NUM >= 160000
#define GS_PROCESSED_GROUP_CLAUSE(root) ((root)->processed_groupClause)
#else
#define GS_PROCESSED_GROUP_CLAUSE(root) ((root)->parse->groupClause)
#endif

/* ---- 16: the table statistics' counters renamed ---- */
#if PG_VERSION_NUM >= 160000
#define GS_PGSTAT_COUNT_TUPLES_RETURNED(rel, n) \
	do { \
		if (pgstat_should_count_relation(rel)) \
			(rel)->pgstat_info->counts.tuples_returned += (n); \
	} while (0)
#else
#define GS_PGSTAT_COUNT_TUPLES_RETURNED(rel, n) \
	do { \
		if (pgstat_should_count_relation(rel)) \
			(rel)->pgstat_info->t_counts.t_tuples_returned += (n); \
	} while (0)
#endif

/* ---- 16: root->num_groupby_pathkeys ---- */
#if PG_VERSION_NUM >= 160000
#define GS_GROUPBY_PATHKEYS(root) \
	list_copy_head((root)->group_pathkeys, (root)->num_groupby_pathkeys)
#else
#define GS_GROUPBY_PATHKEYS(root) ((root)->group_pathkeys)
#endif

/* ---- 18: EXPLAIN's count of range table entries leaves out RTE_GROUP ---- */
#if PG_VERSION_NUM >= 180000
#define GS_EXPLAIN_RTABLE_SIZE(es) ((es)->rtable_size)
#else
#define GS_EXPLAIN_RTABLE_SIZE(es) list_length((es)->rtable)
#endif

/* ---- 16: adjust_appendrel_attrs_multilevel takes RelOptInfos ---- */
#if PG_VERSION_NUM >= 160000
#define GS_ADJUST_APPENDREL_MULTILEVEL(root, node, child, top) \
	adjust_appendrel_attrs_multilevel((root), (node), (child), (top))
#else
#define GS_ADJUST_APPENDREL_MULTILEVEL(root, node, child, top) \
	adjust_appendrel_attrs_multilevel((root), (node), (child)->relids, (top)->relids)
#endif

/* ---- 17: the DSM registry (named shared memory without preloading) ---- */
#if PG_VERSION_NUM >= 170000
#include "storage/dsm_registry.h"
#define GS_HAVE_DSM_REGISTRY 1
#endif

/* ---- 17: CreateWaitEventSet(ResourceOwner, n) ---- */
#include "storage/latch.h"
/* ---- 18: ExecutorRun without execute_once ---- */
#if PG_VERSION_NUM >= 180000
#define GS_EXECUTOR_RUN_PARAMS	QueryDesc *queryDesc, ScanDirection direction, uint64 count
#define GS_EXECUTOR_RUN_ARGS	queryDesc, direction, count
#else
#define GS_EXECUTOR_RUN_PARAMS	QueryDesc *queryDesc, ScanDirection direction, uint64 count, \
								bool execute_once
#define GS_EXECUTOR_RUN_ARGS	queryDesc, direction, count, execute_once
#endif

#if PG_VERSION_NUM >= 170000
#define gs_create_wait_set(n) CreateWaitEventSet(NULL, (n))
#else
#include "utils/memutils.h"
#define gs_create_wait_set(n) CreateWaitEventSet(TopMemoryContext, (n))
#endif

#endif							/* GS_PG_COMPAT_H */
