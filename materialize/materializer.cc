// uih/materialize.h's materializer: a queue of submitted batches, worker
// threads that rebuild them (uih::Materialize, whole batches each), and
// results handed back in submission order. A worker takes the oldest batch
// nobody has started among the `depth` oldest pending ones (so at most
// `depth` results wait ahead of the caller); the caller waits only for the
// oldest result.
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "uih_plugin/c_api.h"
#include "materialize_internal.h"
#include "uih/materialize.h"

namespace {

struct Job {
  std::vector<std::string> records;
  bool started = false, done = false;
  int rc = UIH_OK;
  uih_error err{};
  uih_materialized* out = nullptr;
  uih_materialize_stats stats{};
  ~Job() { uih_materialized_free(out); }
};

}  // namespace

struct uih_materializer {
  uih_store* s = nullptr;
  uih_projection projection{};
  uih_materializer_opts opts{};

  std::mutex mu;
  std::condition_variable work;  // a job may start, or stop
  std::condition_variable done;  // a job finished
  std::deque<std::unique_ptr<Job>> jobs;  // submitted, not yet taken, in order
  bool stop = false;
  std::vector<std::thread> workers;

  void Work() {
    std::unique_lock<std::mutex> lock(mu);
    for (;;) {
      Job* job = nullptr;
      work.wait(lock, [&] {  // the oldest unstarted batch within `depth` of the caller
        if (stop) return true;
        for (size_t i = 0; i < jobs.size() && i < opts.depth; i++)
          if (!jobs[i]->started) return (job = jobs[i].get()) != nullptr;
        return false;
      });
      if (stop) return;
      job->started = true;
      lock.unlock();
      std::vector<const uint8_t*> ptrs(job->records.size());
      std::vector<size_t> lens(job->records.size());
      for (size_t i = 0; i < ptrs.size(); i++) {
        ptrs[i] = reinterpret_cast<const uint8_t*>(job->records[i].data());
        lens[i] = job->records[i].size();
      }
      uih_materialized* out = nullptr;
      uih_materialize_stats st{};
      uih_error err{};
      int rc = uih::CallC(&err, "uih_materializer", [&] {
        return uih::Materialize(s, ptrs.data(), lens.data(), ptrs.size(), &projection, !opts.each_record, !opts.no_batch_reads, &out, &st,
                                &err);
      });
      lock.lock();
      job->rc = rc;
      job->err = err;
      job->out = out;
      job->stats = st;
      job->done = true;
      done.notify_all();
    }
  }

  ~uih_materializer() {
    {
      std::lock_guard<std::mutex> lock(mu);
      stop = true;
    }
    work.notify_all();
    for (std::thread& t : workers) t.join();
  }
};

extern "C" {

int uih_materializer_create(uih_store* s, const uih_projection* projection, const uih_materializer_opts* opts,
                            uih_materializer** out, uih_error* err) {
  return uih::CallC(err, "uih_materializer_create", [&]() -> int {
    if (s == nullptr || projection == nullptr || out == nullptr)
      return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "materializer: NULL argument");
    uih_materializer_opts o = UIH_MATERIALIZER_OPTS_DEFAULT;
    if (opts) o = *opts;
    if (o.threads == 0) o.threads = 1;
    if (o.threads > 64) return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "materializer: %u threads, at most 64", o.threads);
    if (o.depth == 0) o.depth = o.threads + 1;
    // The projection checked once, here: an empty batch runs every check.
    uih_materialized* none = nullptr;
    int rc = uih::Materialize(s, nullptr, nullptr, 0, projection, true, true, &none, nullptr, err);
    uih_materialized_free(none);
    if (rc != UIH_OK) return rc;
    auto m = std::make_unique<uih_materializer>();
    m->s = s;
    m->projection = *projection;
    m->opts = o;
    for (uint32_t i = 0; i < o.threads; i++) m->workers.emplace_back([p = m.get()] { p->Work(); });
    *out = m.release();
    return UIH_OK;
  });
}

int uih_materializer_submit(uih_materializer* m, const uint8_t* const* records, const size_t* lens, size_t n,
                            uih_error* err) {
  return uih::CallC(err, "uih_materializer_submit", [&]() -> int {
    if (m == nullptr || (n && (records == nullptr || lens == nullptr)))
      return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "materializer: NULL argument");
    auto job = std::make_unique<Job>();
    job->records.reserve(n);
    for (size_t i = 0; i < n; i++)
      job->records.emplace_back(records[i] ? reinterpret_cast<const char*>(records[i]) : "", records[i] ? lens[i] : 0);
    std::lock_guard<std::mutex> lock(m->mu);
    m->jobs.push_back(std::move(job));
    m->work.notify_one();
    return UIH_OK;
  });
}

int uih_materializer_next(uih_materializer* m, uih_materialized** out, uih_materialize_stats* stats, uih_error* err) {
  return uih::CallC(err, "uih_materializer_next", [&]() -> int {
    if (m == nullptr || out == nullptr) return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "materializer: NULL argument");
    std::unique_ptr<Job> job;
    {
      std::unique_lock<std::mutex> lock(m->mu);
      if (m->jobs.empty()) return uih_error_set(err, UIH_ERR_NOT_FOUND, "materializer: no batch pending");
      m->done.wait(lock, [&] { return m->jobs.front()->done; });
      job = std::move(m->jobs.front());
      m->jobs.pop_front();
    }
    m->work.notify_all();  // the window moved: one more batch may start
    if (job->rc != UIH_OK) return uih_error_set(err, job->rc, "%s", uih_error_message(&job->err));
    if (stats) *stats = job->stats;
    *out = job->out;
    job->out = nullptr;
    return UIH_OK;
  });
}

void uih_materializer_free(uih_materializer* m) {
  uih::CallCVoid([&] { delete m; });
}

}  // extern "C"
