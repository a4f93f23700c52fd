// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file streams.hpp
/// The socket and stream types of the bridge's server, bound to the
/// io_context's own executor. Beast's defaults (beast::tcp_stream,
/// tcp::acceptor) carry the type-erased any_io_executor, which every
/// asynchronous operation instantiates through: with it server.cpp alone
/// took minutes and gigabytes to compile.

#include <boost/asio/basic_socket_acceptor.hpp>
#include <boost/asio/basic_waitable_timer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/basic_stream.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

#include <chrono>

namespace gecko::bridge {

using Executor = boost::asio::io_context::executor_type;
using TcpAcceptor = boost::asio::basic_socket_acceptor<boost::asio::ip::tcp, Executor>;
using TcpSocket = boost::asio::basic_stream_socket<boost::asio::ip::tcp, Executor>;
using TcpStream = boost::beast::basic_stream<boost::asio::ip::tcp, Executor>;
using TlsStream = boost::beast::ssl_stream<TcpStream>;
using Timer = boost::asio::basic_waitable_timer<std::chrono::steady_clock,
                                                boost::asio::wait_traits<std::chrono::steady_clock>, Executor>;

}  // namespace gecko::bridge
