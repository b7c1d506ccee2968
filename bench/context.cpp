#include "context.hpp"

#include <unistd.h>

#include <ctime>
#include <string>
#include <thread>

#include "bench_commit.hpp"
#include "contract.hpp"

#if CAIRN_BENCH_HAVE_MPI
#include <mpi.h>
#endif

namespace cairn::bench {

namespace {
std::string make_context() {
  char date[32] = {};
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &utc);
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  std::string mpi = "null";
#if CAIRN_BENCH_HAVE_MPI
  // One of the calls MPI allows before MPI_Init; its first line names library and version.
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  if (MPI_Get_library_version(version, &length) == MPI_SUCCESS) {
    std::string text(version, static_cast<std::size_t>(length));
    text = text.substr(0, text.find_first_of("\n,"));
    while (!text.empty() && (text.back() == ' ' || text.back() == '\0')) text.pop_back();
    mpi = json_text(text);
  }
#endif
  return "{\"commit\":" + json_text(CAIRN_BENCH_COMMIT) + ",\"date\":" + json_text(date) +
         ",\"host\":" + json_text(host) +
         ",\"cores\":" + std::to_string(std::thread::hardware_concurrency()) +
         ",\"compiler\":" + json_text("g++ " __VERSION__) + ",\"mpi\":" + mpi + "}";
}
}  // namespace

const std::string& run_context_json() {
  static const std::string context = make_context();
  return context;
}

}  // namespace cairn::bench
