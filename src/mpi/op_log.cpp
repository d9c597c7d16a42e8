#include "mpi/op_log.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "common/log.h"

namespace hcops {
namespace mpi {

namespace {

// MPI has no MPI_Op_get_name: the predefined ops are told by their handles.
const char *op_name(MPI_Op op) {
  static const struct {
    MPI_Op op;
    const char *name;
  } known[] = {{MPI_SUM, "MPI_SUM"},         {MPI_PROD, "MPI_PROD"},     {MPI_MAX, "MPI_MAX"},
               {MPI_MIN, "MPI_MIN"},         {MPI_LAND, "MPI_LAND"},     {MPI_BAND, "MPI_BAND"},
               {MPI_LOR, "MPI_LOR"},         {MPI_BOR, "MPI_BOR"},       {MPI_LXOR, "MPI_LXOR"},
               {MPI_BXOR, "MPI_BXOR"},       {MPI_MAXLOC, "MPI_MAXLOC"}, {MPI_MINLOC, "MPI_MINLOC"},
               {MPI_REPLACE, "MPI_REPLACE"}, {MPI_NO_OP, "MPI_NO_OP"},   {MPI_OP_NULL, "-"}};
  for (const auto &k : known)
    if (k.op == op) return k.name;
  return "user";
}

// The datatype's name, kept to one field of the line.
std::string type_name(MPI_Datatype type) {
  char name[MPI_MAX_OBJECT_NAME] = "";
  int len = 0;
  if (PMPI_Type_get_name(type, name, &len) != MPI_SUCCESS || len <= 0) return "derived";
  std::string s(name, static_cast<std::size_t>(std::min(len, MPI_MAX_OBJECT_NAME - 1)));
  std::replace_if(
      s.begin(), s.end(), [](char c) { return c == ',' || c == '\n'; }, '_');
  return s;
}

}  // namespace

void log_legend() {
  print_line("hcops_verbose,mpi_legend,rank,call,ranks,count,type,op,bytes,in_flight_ms,exposed_ms");
}

void log_describe(Op *op, const char *call, int count, MPI_Datatype type, MPI_Op mop, MPI_Comm comm) {
  op->log = new OpLog;
  op->log->call = call;  // a copy: the client's string may go with its operation
  std::replace_if(
      op->log->call.begin(), op->log->call.end(), [](char c) { return c == ',' || c == '\n'; }, '_');
  op->log->count = count;
  PMPI_Comm_size(comm, &op->log->ranks);
  op->log->type = type == MPI_DATATYPE_NULL ? "-" : type_name(type);
  op->log->op = op_name(mop);
}

void log_op(int rank, const Op *op, double exposed) {
  const OpLog *l = op->log;
  const double flight = std::max(0.0, l->done - l->launched);
  char shown[32] = "-";
  if (exposed >= 0) snprintf(shown, sizeof shown, "%.3f", std::min(exposed, flight) * 1e3);
  print_line("hcops_verbose,mpi,%d,%s,%d,%d,%s,%s,%zu,%.3f,%s", rank, l->call.c_str(), l->ranks, l->count, l->type.c_str(),
             l->op, op->bytes, flight * 1e3, shown);
}

}  // namespace mpi
}  // namespace hcops
